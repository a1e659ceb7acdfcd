package api_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/rs/zerolog"
)

// TestReadmeWalkthrough runs README.md's shell blocks as written, in order, in one
// bash, the way a newcomer pastes them: real curl and jq against a real server on
// the database a fresh `make run` uses (data/logbook.db, here under a temporary
// directory), and `go run ./cmd/server …` for the CLI. Nothing in the text is
// rewritten: curl finds the server through a curlrc that maps localhost:8080 to
// the test's port, and `go run ./cmd/server` runs a binary built from this tree
// (a `go` first on PATH), so the CLI costs no compile per command. Every
// request's status must be the one on the "# → NNN" line above its curl, and
// every answer must match openapi.yaml.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server and runs bash, curl and jq")
	}
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README walkthrough needs %s (make test installs it): %v", tool, err)
		}
	}
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script, want := readmeScript(t, string(src))
	if len(want) < 20 {
		t.Fatalf("found %d annotated curl commands in README.md; the walkthrough has more", len(want))
	}

	dir := t.TempDir()
	bin := buildServer(t, dir)
	shim := filepath.Join(dir, "shim")
	if err := os.MkdirAll(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(shim, "go"), 0o755, fmt.Sprintf(`#!/bin/sh
# the README's "go run ./cmd/server ARGS", without a compile per command
if [ "$1" = run ] && [ "$2" = ./cmd/server ]; then shift 2; exec %q "$@"; fi
exec %q "$@"
`, bin, goBin))

	work := filepath.Join(dir, "work") // the reader's checkout: data/ is made here
	if err := os.MkdirAll(filepath.Join(work, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	loadSpec(t)
	st := mustOpen(t, sqlite.Config{Path: filepath.Join(work, "data", "logbook.db")})
	rec := &statusRecorder{t: t}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rec.wrap(api.New(api.Config{Store: st, Log: zerolog.Nop(), Spec: logbook.OpenAPI, AllowOpen: true,
		BackupDir: filepath.Join(work, "data", "backups")}))}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	writeFile(t, filepath.Join(dir, ".curlrc"), 0o644, "connect-to = localhost:8080:"+ln.Addr().String()+"\n")

	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + shim + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir, "CURL_HOME=" + dir,
		"GOCACHE=" + goEnv(t, "GOCACHE"), "GOPATH=" + goEnv(t, "GOPATH"), "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README.md's commands failed: %v\n%s", err, tailOf(out))
	}
	got := rec.statuses()
	for i, w := range want {
		if i >= len(got) {
			t.Fatalf("README.md:%d: no request was made for this curl (only %d requests in all)", w.line, len(got))
		}
		if got[i].status != w.status {
			t.Fatalf("README.md:%d: %s answered %d, README says %d", w.line, got[i].request, got[i].status, w.status)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests reached the server, but README.md annotates %d curl commands", len(got), len(want))
	}
	t.Logf("ran README.md: %d requests, each as annotated", len(got))
}

// annotation is a "# → NNN" line and the status it promises the next curl.
type annotation struct {
	line, status int
}

var curlWord = regexp.MustCompile(`(^|[\s($|])curl\s`)

// readmeScript joins the README's sh blocks into one script, and lists their
// status annotations in order. Each curl must have exactly one annotation.
func readmeScript(t *testing.T, src string) (string, []annotation) {
	var (
		script  strings.Builder
		want    []annotation
		inBlock bool
		pending int // annotations not yet matched with a curl
	)
	for i, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inBlock = trimmed == "```sh"
			continue
		}
		if !inBlock {
			continue
		}
		if rest, ok := strings.CutPrefix(trimmed, "# → "); ok {
			n, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatalf("README.md:%d: bad status line %q", i+1, trimmed)
			}
			want = append(want, annotation{line: i + 2, status: n})
			pending++
		}
		if curlWord.MatchString(line) {
			if pending != 1 {
				t.Fatalf("README.md:%d: a curl command needs exactly one '# → STATUS' line before it", i+1)
			}
			pending = 0
		}
		script.WriteString(line + "\n")
	}
	if pending != 0 {
		t.Fatalf("README.md: a '# → STATUS' line with no curl after it")
	}
	return script.String(), want
}

// statusRecorder checks every answer against the spec and keeps its status.
type statusRecorder struct {
	t    *testing.T
	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	request string
	status  int
}

func (s *statusRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &captureWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(cw, r)
		checkResponse(s.t, r, &response{Status: cw.status, Header: w.Header(), Body: cw.body.Bytes()})
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{request: r.Method + " " + r.URL.RequestURI(), status: cw.status})
		s.mu.Unlock()
	})
}

func (s *statusRecorder) statuses() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
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

// buildServer builds ./cmd/server into dir.
func buildServer(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "server")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/server")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the server: %v\n%s", err, out)
	}
	return bin
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

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
