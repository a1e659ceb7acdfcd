package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/logbook/logbook/client"
)

// The tests drive a real server: cmd/server built from this repository
// (the module above this one) once, and started as a process on a free
// loopback port over a fresh database (one for the whole package; each test
// makes its own sessions).

// repoRoot is the repository the client module sits in: its tests build the
// server and read openapi.yaml from there.
const repoRoot = ".."

var server struct {
	url string
	err error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "logbook-client-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	stop, url, err := startServer(filepath.Join(dir, "logbook.db"))
	server.url, server.err = url, err
	os.Setenv("LOGBOOK_URL", url) // for the examples
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// binDir holds the server the tests build (TestMain's directory).
var binDir string

// startServer starts the server (built once) over db (a SQLite file or a
// postgres:// URL) with --addr 127.0.0.1:0 and reads the address it chose
// from its "listening" log line.
func startServer(db string) (stop func(), url string, err error) {
	bin, err := serverBinary()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--db", db, "--log-level", "warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "listening" {
				addr <- line.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		return stop, "http://" + a, nil
	case <-time.After(30 * time.Second):
		stop()
		return nil, "", fmt.Errorf("the server logged no listening line in 30s")
	}
}

var built struct {
	once sync.Once
	path string
	err  error
}

// serverBinary builds cmd/server once for the package's tests (in a
// directory TestMain removes).
func serverBinary() (string, error) {
	built.once.Do(func() {
		built.path = filepath.Join(binDir, "server")
		build := exec.Command("go", "build", "-o", built.path, "./cmd/server")
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build the server: %v\n%s", err, out)
		}
	})
	return built.path, built.err
}

// newClient is a client of base (the server, or a proxy in front of it)
// whose every answer is checked against openapi.yaml.
func newClient(t *testing.T, base string, opts ...client.Option) (*client.Client, *checker) {
	t.Helper()
	if server.err != nil {
		t.Fatalf("no server: %v", server.err)
	}
	chk := &checker{t: t, next: http.DefaultTransport}
	opts = append([]client.Option{client.WithHTTPClient(&http.Client{Transport: chk}),
		client.WithRetries(4, 10*time.Millisecond, 200*time.Millisecond)}, opts...)
	c, err := client.New(base, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, chk
}

var spec struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

func specRouter(t *testing.T) routers.Router {
	t.Helper()
	spec.once.Do(func() {
		asText := func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		}
		openapi3filter.RegisterBodyDecoder("text/event-stream", asText)
		openapi3filter.RegisterBodyDecoder("application/x-ndjson", asText) // an export: a string of lines
		data, err := os.ReadFile(filepath.Join(repoRoot, "openapi.yaml"))
		if err != nil {
			spec.err = err
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(data)
		if err != nil {
			spec.err = err
			return
		}
		doc.Servers = nil // match whatever port the server or a proxy has
		spec.doc = doc
		spec.router, spec.err = legacy.NewRouter(doc)
	})
	if spec.err != nil {
		t.Fatalf("load openapi.yaml: %v", spec.err)
	}
	return spec.router
}

// checker is an http.RoundTripper that validates every answer against
// openapi.yaml (status, headers and body; a live feed's status and headers
// only, its body being endless; a stream's lines one by one as they are
// read, since the client reads them while it still sends) and counts
// requests.
type checker struct {
	t        *testing.T
	next     http.RoundTripper
	requests atomic.Int64
}

func (c *checker) RoundTrip(req *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	route, params, ferr := specRouter(c.t).FindRoute(req)
	if ferr != nil && req.URL.RawPath != "" {
		// An escaped slash (an item key a/b, sent as a%2Fb) is one path
		// parameter; the router matches the decoded path, where it is two.
		esc := req.Clone(req.Context())
		esc.URL.Path, esc.URL.RawPath = req.URL.RawPath, ""
		route, params, ferr = specRouter(c.t).FindRoute(esc)
	}
	if ferr != nil {
		c.t.Errorf("%s %s: not a route of openapi.yaml: %v", req.Method, req.URL.Path, ferr)
		return resp, nil
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                opts,
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		opts.ExcludeResponseBody = true
	case strings.HasPrefix(ct, "application/x-ndjson") && req.Method == http.MethodPost:
		opts.ExcludeResponseBody = true
		resp.Body = &lineChecker{t: c.t, body: resp.Body, what: req.Method + " " + req.URL.Path}
	default:
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		in.SetBodyBytes(body)
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		c.t.Errorf("%s %s → %d does not match openapi.yaml: %v", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		c.t.Errorf("%s %s: no X-Request-Id", req.Method, req.URL.Path)
	}
	return resp, nil
}

// lineChecker validates the lines of a message stream's answer, as they are
// read, as a Message or a Problem of openapi.yaml: every problem, and the
// first messages of each answer (one encoder writes them all, and
// validating each of a thousand costs seconds; the server's own tests
// validate every line).
type lineChecker struct {
	t       *testing.T
	body    io.ReadCloser
	what    string
	partial []byte
	checked int
}

const linesChecked = 32

func (l *lineChecker) Read(p []byte) (int, error) {
	n, err := l.body.Read(p)
	l.partial = append(l.partial, p[:n]...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.check(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
	return n, err
}

func (l *lineChecker) check(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var v map[string]any
	if err := json.Unmarshal(line, &v); err != nil {
		l.t.Errorf("%s: answer line is not JSON: %v\n%s", l.what, err, line)
		return
	}
	schema := "Message"
	if _, ok := v["code"]; ok {
		schema = "Problem"
	} else if l.checked++; l.checked > linesChecked {
		return
	}
	var doc any = v
	if err := spec.doc.Components.Schemas[schema].Value.VisitJSON(doc); err != nil {
		l.t.Errorf("%s: answer line is no %s of openapi.yaml: %v\n%s", l.what, schema, err, line)
	}
}

func (l *lineChecker) Close() error { return l.body.Close() }
