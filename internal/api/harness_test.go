package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/rs/zerolog"
)

// spec is openapi.yaml, loaded once; every response a test sees is checked
// against it, error responses included.
var spec struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

func loadSpec(t testing.TB) (*openapi3.T, routers.Router) {
	t.Helper()
	spec.once.Do(func() {
		openapi3filter.RegisterBodyDecoder("application/yaml", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		})
		openapi3filter.RegisterBodyDecoder("text/event-stream", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		})
		openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		})
		// Files come back as their own media types: the tests' are bytes to the spec.
		for _, ct := range []string{"application/pdf", "image/png", "application/octet-stream", "text/plain", "text/html", "text/javascript"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
		}
		doc, err := openapi3.NewLoader().LoadFromData(logbook.OpenAPI)
		if err != nil {
			spec.err = err
			return
		}
		doc.Servers = nil // match paths whatever port httptest picked
		spec.doc = doc
		spec.router, spec.err = legacy.NewRouter(doc)
	})
	if spec.err != nil {
		t.Fatalf("load openapi.yaml: %v", spec.err)
	}
	return spec.doc, spec.router
}

// mustOpen opens a store on a fresh database file in t.TempDir().
func mustOpen(t testing.TB, cfg sqlite.Config) *sqlite.Store {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "logbook.db")
	}
	cfg.Migrate = true
	st, err := sqlite.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st
}

// client talks to a real server over HTTP and validates every response.
type client struct {
	t     testing.TB
	base  string
	http  *http.Client
	store repo.Store
	key   string // sent as a Bearer token when set
}

// as returns a client that sends key with every request.
func (c *client) as(key string) *client {
	cp := *c
	cp.key = key
	return &cp
}

// mustKey makes an API key straight in the store, as the CLI does.
func mustKey(t testing.TB, c *client, tenant string, scope model.Scope) model.NewAPIKey {
	t.Helper()
	k, err := c.store.CreateAPIKey(context.Background(), tenant, model.CreateAPIKey{Scope: scope, Name: "test"})
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return k
}

type testConfig struct {
	api   api.Config
	repo  sqlite.Config
	embed *testEmbedding // non-nil: server-computed embeddings (embeddings_test.go)
}

type testServerOption func(*testConfig)

func withMaxBody(n int64) testServerOption { return func(c *testConfig) { c.api.MaxBodyBytes = n } }

func withMaxFile(n int64) testServerOption { return func(c *testConfig) { c.api.MaxFileBytes = n } }

func withInflatedPage(n int64) testServerOption {
	return func(c *testConfig) { c.api.MaxInflatedPage = n }
}

func withRateLimit(n int) testServerOption { return func(c *testConfig) { c.api.RateLimit = n } }

// withoutOpenMode is a server on a public address: no key, no access.
func withoutOpenMode() testServerOption { return func(c *testConfig) { c.api.AllowOpen = false } }

func withFaults(f *repo.Faults) testServerOption { return func(c *testConfig) { c.repo.Faults = f } }

// withLog sends the server's log to w.
func withLog(w io.Writer) testServerOption {
	return func(c *testConfig) { c.api.Log = zerolog.New(w).Level(zerolog.DebugLevel) }
}

func withCheckpointKeep(n int) testServerOption {
	return func(c *testConfig) { c.api.CheckpointKeep = n }
}

// withStreamGrace sets how long an export or import may dribble before its
// bytes must keep up the minimum rate.
func withStreamGrace(d time.Duration) testServerOption {
	return func(c *testConfig) { c.api.StreamGrace = d }
}

// withDB puts the database at path (for a file system the test prepared).
func withEventsHeartbeat(d time.Duration) testServerOption {
	return func(c *testConfig) { c.api.EventsHeartbeat = d }
}

// withJobWait sets how long a job's route waits before answering 202.
func withJobWait(d time.Duration) testServerOption { return func(c *testConfig) { c.api.JobWait = d } }

func withDB(path string) testServerOption { return func(c *testConfig) { c.repo.Path = path } }

// withEventsWriteTimeout sets how long a write to a live feed's client may
// block before the stream is cut.
func withEventsWriteTimeout(d time.Duration) testServerOption {
	return func(c *testConfig) { c.api.EventsWriteTimeout = d }
}

// withEventsRecheck sets how often a live feed checks that its reader may
// still read it.
func withEventsRecheck(d time.Duration) testServerOption {
	return func(c *testConfig) { c.api.EventsRecheck = d }
}

// newClient starts the real router over a real store behind httptest.
func newClient(t testing.TB, opts ...testServerOption) *client {
	t.Helper()
	loadSpec(t)
	cfg := testConfig{api: api.Config{Log: zerolog.Nop(), Spec: logbook.OpenAPI, AllowOpen: true}}
	for _, o := range opts {
		o(&cfg)
	}
	var st repo.Store
	if onPostgres {
		st = openPostgres(t, cfg.repo.Path, cfg.repo.Faults)
	} else {
		st = mustOpen(t, cfg.repo)
	}
	cfg.api.Store = st
	if cfg.embed != nil {
		cfg.embed.start(t, &cfg, st)
	}
	h := api.New(cfg.api)
	t.Cleanup(h.StopJobs) // after the server closes, before the store does
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &client{t: t, base: ts.URL, http: ts.Client(), store: st}
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// problem is the part of a problem+json body that tests look at.
type problem struct {
	Status int                `json:"status"`
	Code   string             `json:"code"`
	Detail string             `json:"detail"`
	Errors []model.FieldError `json:"errors"`
	From   string             `json:"from"`
	To     string             `json:"to"`
}

// do sends a request. body is sent as is when it is a string or []byte and as JSON
// otherwise; headers come in name, value pairs. Content-Type defaults to JSON.
func (c *client) do(method, path string, body any, headers ...string) *response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatalf("marshal body: %v", err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatalf("new request: %v", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := &response{Status: res.StatusCode, Header: res.Header, Body: out}
	checkResponse(c.t, req, r)
	return r
}

// checkResponse validates a response against openapi.yaml. A route the spec does
// not know (a test of an unknown path) must still answer a valid Problem.
func checkResponse(t testing.TB, req *http.Request, r *response) {
	t.Helper()
	doc, router := loadSpec(t)
	if r.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: no X-Request-Id header", req.Method, req.URL.Path)
	}
	route, params, err := router.FindRoute(req)
	if err != nil && req.URL.RawPath != "" {
		// The router matches the decoded path, where an escaped slash (an
		// item's key a/b, sent as a%2Fb) splits a parameter in two; the
		// server routes the escaped one.
		esc := req.Clone(req.Context())
		esc.URL.Path, esc.URL.RawPath = req.URL.RawPath, ""
		route, params, err = router.FindRoute(esc)
	}
	if err != nil {
		if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s %s: route not in openapi.yaml and the answer is %s, not a problem", req.Method, req.URL.Path, ct)
			return
		}
		var v any
		if err := json.Unmarshal(r.Body, &v); err != nil {
			t.Errorf("%s %s: problem body is not JSON: %v", req.Method, req.URL.Path, err)
			return
		}
		if err := doc.Components.Schemas["Problem"].Value.VisitJSON(v); err != nil {
			t.Errorf("%s %s: problem does not match the Problem schema: %v\n%s", req.Method, req.URL.Path, err, r.Body)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{IncludeResponseStatus: true},
		},
		Status:  r.Status,
		Header:  r.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(r.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s → %d does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, r.Status, err, r.Body)
	}
}

// want fails the test unless the response has the given status, and decodes the
// body into v when v is not nil.
func (r *response) want(t testing.TB, status int, v any) *response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body: %s", r.Status, status, r.Body)
	}
	if v != nil {
		if err := json.Unmarshal(r.Body, v); err != nil {
			t.Fatalf("decode %s: %v", r.Body, err)
		}
	}
	return r
}

// wantProblem fails unless the response is a problem with this status and code.
func (r *response) wantProblem(t testing.TB, status int, code string) problem {
	t.Helper()
	var p problem
	r.want(t, status, &p)
	if p.Code != code {
		t.Fatalf("code = %q, want %q; body: %s", p.Code, code, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json", ct)
	}
	return p
}

func mustCreateSession(t testing.TB, c *client, body any) model.Session {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	var s model.Session
	c.do("POST", "/v1/sessions", body).want(t, http.StatusCreated, &s)
	return s
}

func mustAppend(t testing.TB, c *client, sessionID string, msg any, headers ...string) model.Message {
	t.Helper()
	var m model.Message
	c.do("POST", "/v1/sessions/"+sessionID+"/messages", msg, headers...).want(t, http.StatusCreated, &m)
	return m
}

func mustGetSession(t testing.TB, c *client, id string) model.Session {
	t.Helper()
	var s model.Session
	c.do("GET", "/v1/sessions/"+id, nil).want(t, http.StatusOK, &s)
	return s
}

// listAll walks every page of a list with the given page size.
func listAll[T any](t testing.TB, c *client, path string, limit int) []T {
	t.Helper()
	var all []T
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	next := path + sep + "limit=" + strconv.Itoa(limit)
	for {
		var p model.Page[T]
		c.do("GET", next, nil).want(t, http.StatusOK, &p)
		all = append(all, p.Data...)
		if !p.HasMore {
			if p.NextCursor != nil {
				t.Fatalf("has_more false but next_cursor %q", *p.NextCursor)
			}
			return all
		}
		if p.NextCursor == nil || len(p.Data) != limit {
			t.Fatalf("has_more with %d rows (limit %d) and cursor %v", len(p.Data), limit, p.NextCursor)
		}
		next = path + sep + "limit=" + strconv.Itoa(limit) + "&cursor=" + *p.NextCursor
	}
}

// withEventsMaxStreams sets how many live feeds one principal holds open.
func withEventsMaxStreams(n int) testServerOption {
	return func(c *testConfig) { c.api.EventsMaxStreams = n }
}
