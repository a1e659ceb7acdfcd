package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/rs/zerolog"
)

// TestGuides runs README.md, then each guide under docs/guides in the order
// the README links them, the way a reader pastes them: every sh block as
// written, in one bash per file, with real curl and jq, against one server on
// the database a fresh `make run` uses (data/logbook.db, here in a temporary
// checkout). Nothing in the text is rewritten. curl finds the server through
// a curlrc that maps localhost:8080 to the test's port; bin/logbook and
// bin/embedserver are this tree's, behind a wrapper that maps the other
// ports a guide names (8081 for a second server, 11435 for the stand-in
// embedding endpoint) to free ones, where a proxy records what they answer.
//
// Every request must get the status on the "# → NNN" line above its curl, and
// every request and answer must match openapi.yaml. Every JSON sample must
// match the schema it names, and show what its block printed
// (guides_md_test.go has the conventions). A guide must leave nothing behind:
// no file beside data/, no temporary directory, no process.
func TestGuides(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server and runs bash, curl and jq")
	}
	// The guides' CLI commands open make run's database file, so the server
	// is on that file whatever backend the suite runs on: a second run would
	// only repeat the first.
	requireSQLite(t, "the guides run against make run's SQLite file, which their CLI commands open")
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the guides need %s (make test installs it): %v", tool, err)
		}
	}
	const root = "../.."
	guides := guidesInOrder(t, root)

	dir := t.TempDir()
	w := &walk{root: root, work: filepath.Join(dir, "work"), tmp: filepath.Join(dir, "tmp"), pids: filepath.Join(dir, "pids")}
	for _, d := range []string{filepath.Join(w.work, "data"), filepath.Join(w.work, "bin"), w.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	second, embed := freePort(t), freePort(t) // what the guides' 8081 and 11435 become
	for name, pkg := range map[string]string{"logbook": "./cmd/server", "embedserver": "./cmd/embedserver"} {
		real := buildCommand(t, dir, name, pkg)
		writeFile(t, filepath.Join(w.work, "bin", name), 0o755, portWrapper(real, w.pids, second, embed))
	}
	t.Cleanup(func() { w.stopLeftovers(t) })

	doc, _ := loadSpec(t)
	st := mustOpen(t, sqlite.Config{Path: filepath.Join(w.work, "data", "logbook.db")})
	w.rec = &recorder{}
	main := serve(t, w.rec.wrap(api.New(api.Config{Store: st, Log: zerolog.Nop(), Spec: logbook.OpenAPI, AllowOpen: true,
		BackupDir: filepath.Join(w.work, "data", "backups")})))
	proxy := serve(t, upstream(w.rec, fmt.Sprintf("127.0.0.1:%d", second)))
	writeFile(t, filepath.Join(dir, ".curlrc"), 0o644, fmt.Sprintf(
		"connect-to = localhost:8080:%[1]s\nconnect-to = 127.0.0.1:8080:%[1]s\nconnect-to = localhost:8081:%[2]s\nconnect-to = 127.0.0.1:8081:%[2]s\n",
		main, proxy))
	w.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "CURL_HOME=" + dir, "TMPDIR=" + w.tmp, "LANG=C.UTF-8"}

	for _, g := range guides {
		// Later guides build on what earlier ones made, as a reader's do.
		if !t.Run(strings.ReplaceAll(g.path, "/", "_"), func(t *testing.T) { w.run(t, doc, g) }) {
			break
		}
	}
}

// The other docs' JSON samples match openapi.yaml too; none of their blocks
// runs.
func TestDocSamples(t *testing.T) {
	doc, _ := loadSpec(t)
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	for _, f := range files {
		g, err := readGuide("../..", "docs/"+filepath.Base(f))
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range checkSamples(doc, g, nil) {
			t.Error(err)
		}
	}
}

// docs/api.md's table of error codes has every code the spec has.
func TestAPIDocListsEveryErrorCode(t *testing.T) {
	doc, _ := loadSpec(t)
	md, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	codes := doc.Components.Schemas["ErrorCode"].Value.Enum
	if len(codes) < 30 {
		t.Fatalf("ErrorCode has %d codes in openapi.yaml", len(codes))
	}
	for _, c := range codes {
		if !strings.Contains(string(md), fmt.Sprintf("| `%s` |", c)) {
			t.Errorf("docs/api.md's table of errors lacks %s", c)
		}
	}
}

// docs/development.md, which the README says lists every make target, does:
// a target added to the Makefile without a line there fails here.
func TestDevelopmentDocListsEveryMakeTarget(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile("../../docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	targets := regexp.MustCompile(`(?m)^([a-z][a-z-]*):`).FindAllStringSubmatch(string(mk), -1)
	if len(targets) < 20 {
		t.Fatalf("found %d targets in the Makefile; it has more", len(targets))
	}
	for _, m := range targets {
		if !strings.Contains(string(md), "`make "+m[1]+"`") {
			t.Errorf("docs/development.md does not list `make %s`", m[1])
		}
	}
}

// The program is logbook (built as bin/logbook from cmd/server): a doc, a
// build file or a message that says `server keys …` or bin/server sends a
// reader to a command that does not exist.
func TestDocsNameTheBinaryLogbook(t *testing.T) {
	old := regexp.MustCompile("(^|[\\s`(])(bin/server|go run \\./cmd/server|server (migrate|keys|export|import|backup|agents|version|help)\\b|server --[a-z-]+)")
	var files []string
	for _, f := range []string{"README.md", "Makefile", "Dockerfile", "docker-compose.yml", ".ci/run", "openapi.yaml"} {
		files = append(files, filepath.Join("../..", f))
	}
	for _, dir := range []string{"docs", "scripts", "cmd", "internal", "examples"} {
		err := filepath.WalkDir(filepath.Join("../..", dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
				return err
			}
			if ext := filepath.Ext(path); ext == ".md" || ext == ".go" || ext == ".sh" {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 100 {
		t.Fatalf("%d files to read; there are more", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := old.FindStringSubmatch(line); m != nil {
				t.Errorf("%s:%d: %q: the program is logbook (bin/logbook)", strings.TrimPrefix(f, "../../"), i+1, m[2])
			}
		}
	}
}

// guidesInOrder is README.md, then the guides in the order of its numbered
// list of them. Every guide must be in it: one that is not would never run.
func guidesInOrder(t *testing.T, root string) []guide {
	readme, err := readGuide(root, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range regexp.MustCompile(`(?m)^\d+\. \[[^]]+\]\((docs/guides/[a-z0-9-]+\.md)\)`).FindAllStringSubmatch(string(src), -1) {
		if !slices.Contains(order, m[1]) {
			order = append(order, m[1])
		}
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "guides", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rel := "docs/guides/" + filepath.Base(f)
		if !slices.Contains(order, rel) {
			t.Errorf("README.md's numbered list of guides lacks %s: the tests run the guides in that list, in its order", rel)
		}
	}
	guides := []guide{readme}
	for _, rel := range order {
		g, err := readGuide(root, rel)
		if err != nil {
			t.Fatal(err)
		}
		guides = append(guides, g)
	}
	if len(guides) < 9 {
		t.Fatalf("README.md links %d guides (%v); there are more", len(guides)-1, order)
	}
	return guides
}

// walk is the reader's checkout and what runs in it.
type walk struct {
	root, work, tmp string
	pids            string // the wrapped binaries write their pids here
	env             []string
	rec             *recorder
}

func (w *walk) run(t *testing.T, doc *openapi3.T, g guide) {
	if err := g.refusesUnrunShells(); err != nil {
		t.Fatal(err)
	}
	want, err := g.annotations()
	if err != nil {
		t.Fatal(err)
	}
	script, lineOf := g.script()
	stdout, stderr := filepath.Join(w.tmp, "..", "stdout"), filepath.Join(w.tmp, "..", "stderr")
	w.rec.start(t)
	runErr := runBash(script, w.work, w.env, stdout, stderr)
	got := w.rec.finish(t)
	w.checkLeftovers(t, g)
	out, _ := os.ReadFile(stdout)
	errOut, _ := os.ReadFile(stderr)
	if runErr != nil {
		where := g.path
		if m := scriptLine.FindSubmatch(errOut); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			where = lineOf(n)
		}
		t.Fatalf("%s: the command failed: %v\nstderr:\n%s\nstdout:\n%s", where, runErr, tailOf(errOut), tailOf(out))
	}

	i := 0
	for k, a := range want {
		if i >= len(got) {
			t.Fatalf("%s: no request was made for this curl (%d requests in all)", a, len(got))
		}
		if got[i].status != a.status {
			t.Fatalf("%s: %s answered %d, the guide says %d", a, got[i].request, got[i].status, a.status)
		}
		// A loop's curl takes the requests to its route that follow, but for
		// one for each curl after it (the next may ask the same).
		first, after := got[i], len(want)-k-1
		for i++; a.repeat && i < len(got) && len(got)-i > after && got[i].route() == first.route() && got[i].status == a.status; i++ {
		}
	}
	if i != len(got) {
		t.Fatalf("%d requests reached the servers, but %s's curls account for %d; the first unaccounted: %s", len(got), g.path, i, got[i].request)
	}
	for _, err := range checkSamples(doc, g, outputs(string(out))) {
		t.Error(err)
	}
	t.Logf("ran %s: %d requests, each as annotated", g.path, len(got))
}

// runBash runs a script with its output in files, not pipes, so that a
// process it leaves running cannot keep the test waiting for EOF.
func runBash(script, dir string, env []string, stdout, stderr string) error {
	o, err := os.Create(stdout)
	if err != nil {
		return err
	}
	defer o.Close()
	e, err := os.Create(stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	// A guide runs in seconds; one that waits for ever (a wait on a process
	// it never stopped) fails here rather than at the suite's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, o, e
	return cmd.Run()
}

// checkLeftovers fails a guide that leaves a process running, a file beside
// data/ and bin/, or a temporary directory; it stops what it finds, so that
// the next guide starts clean.
func (w *walk) checkLeftovers(t *testing.T, g guide) {
	for _, p := range w.stopLeftovers(t) {
		t.Errorf("%s left a process running: %s", g.path, p)
	}
	entries, _ := os.ReadDir(w.work)
	for _, e := range entries {
		if e.Name() != "data" && e.Name() != "bin" {
			t.Errorf("%s left %s in the repository's root: work in a temporary directory", g.path, e.Name())
			os.RemoveAll(filepath.Join(w.work, e.Name()))
		}
	}
	entries, _ = os.ReadDir(w.tmp)
	for _, e := range entries {
		t.Errorf("%s left %s in $TMPDIR: remove what the guide makes", g.path, e.Name())
		os.RemoveAll(filepath.Join(w.tmp, e.Name()))
	}
}

// stopLeftovers waits a little for the wrapped binaries a guide started to
// exit (a server drains on SIGTERM), then kills the rest and names them.
func (w *walk) stopLeftovers(t *testing.T) []string {
	b, _ := os.ReadFile(w.pids)
	os.Remove(w.pids)
	var left []string
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			left = append(left, strings.ReplaceAll(string(cmdline), "\x00", " "))
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return left
}

// alive: the process exists and is not a zombie its parent has yet to reap.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := bytes.Cut(stat, []byte(") "))
	return len(rest) > 0 && rest[0] != 'Z'
}

// portWrapper is a script in the reader's bin/ that records its pid and runs
// the real binary with the guides' fixed ports replaced by the test's.
func portWrapper(real, pids string, second, embed int) string {
	return fmt.Sprintf(`#!/bin/sh
# The guides' fixed ports are free ones here (internal/api/guides_test.go).
echo $$ >> %q
for a do
	shift
	set -- "$@" "$(printf '%%s' "$a" | sed -e 's/\(127\.0\.0\.1\|localhost\):8081/127.0.0.1:%d/g' -e 's/\(127\.0\.0\.1\|localhost\):11435/127.0.0.1:%d/g')"
done
exec %q "$@"
`, pids, second, embed, real)
}

// buildCommand builds a command of this tree into dir.
func buildCommand(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, "build", name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// serve serves h on a free loopback port until the test ends.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// upstream proxies to a server a guide starts itself, recording as the main
// server does. While nothing listens there it drops the connection, as a
// closed port would fail a reader's curl, and records nothing.
func upstream(rec *recorder, addr string) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	rp.FlushInterval = -1 // event streams
	rp.ErrorLog = log.New(io.Discard, "", 0)
	recorded := rec.wrap(rp)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		c.Close()
		recorded.ServeHTTP(w, r)
	})
}

// recorder keeps every request's status in the order the requests arrived,
// and checks each request and answer against the spec.
type recorder struct {
	mu   sync.Mutex
	t    *testing.T
	seen []*seenRequest
	// inflight counts the requests being served, under mu; idle is
	// signalled when it falls to 0. A WaitGroup will not do: a request may
	// arrive (a client's reconnect) while finish waits.
	inflight int
	idle     *sync.Cond
}

type seenRequest struct {
	request string
	status  int
}

// route is the request's method and path, without its query.
func (s *seenRequest) route() string {
	r, _, _ := strings.Cut(s.request, "?")
	return r
}

// idleCond is rec.idle, made on first use; mu must be held.
func (rec *recorder) idleCond() *sync.Cond {
	if rec.idle == nil {
		rec.idle = sync.NewCond(&rec.mu)
	}
	return rec.idle
}

func (rec *recorder) start(t *testing.T) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.t, rec.seen = t, nil
}

// finish waits for the requests still running (an event stream ends a moment
// after its client) and answers what was seen.
func (rec *recorder) finish(t *testing.T) []seenRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	deadline := time.AfterFunc(10*time.Second, func() {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.idleCond().Broadcast()
	})
	defer deadline.Stop()
	start := time.Now()
	for rec.inflight > 0 && time.Since(start) < 10*time.Second {
		rec.idleCond().Wait()
	}
	if rec.inflight > 0 {
		t.Errorf("requests still running 10 s after the guide ended")
	}
	var got []seenRequest
	for _, s := range rec.seen {
		got = append(got, *s)
	}
	rec.seen = nil
	return got
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		seen := &seenRequest{request: r.Method + " " + r.URL.RequestURI()}
		rec.mu.Lock()
		rec.inflight++
		defer func() {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.inflight--; rec.inflight == 0 {
				rec.idleCond().Broadcast()
			}
		}()
		rec.seen = append(rec.seen, seen)
		t := rec.t
		rec.mu.Unlock()

		cw := &captureWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(cw, r)
		if t != nil {
			checkResponse(t, r, &response{Status: cw.status, Header: w.Header(), Body: cw.body.Bytes()})
			if cw.status < 300 {
				checkRequest(t, r, body)
			}
		}
		rec.mu.Lock()
		seen.status = cw.status
		rec.mu.Unlock()
	})
}

// checkRequest validates a request the server accepted against openapi.yaml:
// what a guide sends, the spec must admit.
func checkRequest(t testing.TB, r *http.Request, body []byte) {
	_, router := loadSpec(t)
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := router.FindRoute(req)
	if err != nil {
		return // not an API route (/readyz is; the dashboard's files are not)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		t.Errorf("%s %s was answered %s but does not match openapi.yaml: %v\nbody: %s", r.Method, r.URL.RequestURI(), "2xx", err, tailOf(body))
	}
}

type captureWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *captureWriter) WriteHeader(status int) {
	c.status = status
	c.ResponseWriter.WriteHeader(status)
}

func (c *captureWriter) Write(p []byte) (int, error) {
	c.body.Write(p)
	return c.ResponseWriter.Write(p)
}

// Unwrap lets the handlers' ResponseController reach the connection: event
// streams flush, NDJSON streams answer while they read.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func writeFile(t *testing.T, path string, mode os.FileMode, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func tailOf(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}
