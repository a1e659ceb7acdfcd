package client_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// proxy stands between a client and the server and breaks things on cue: it
// drops an answer after the server applied the request (the client sees the
// connection close), or answers 503 or 429 itself without forwarding. Live
// feeds stream through it; CloseClientConnections cuts them.
type proxy struct {
	*httptest.Server
	target *url.URL
	rp     *httputil.ReverseProxy

	mu     sync.Mutex
	faults []fault
	seen   []seenRequest
}

type fault struct {
	method, pathSuffix string
	kind               string // dropAnswer, "503", "429"
	retryAfter         string
}

const dropAnswer = "drop-answer"

type seenRequest struct {
	method, path, idempotencyKey, lastEventID string
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{target: u, rp: httputil.NewSingleHostReverseProxy(u)}
	p.rp.FlushInterval = -1                    // pass each event of a live feed on at once
	p.rp.ErrorLog = log.New(io.Discard, "", 0) // cut feeds are the point, not news
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

// fail makes the next request whose method and path match fail as kind.
func (p *proxy) fail(f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
}

// requests lists what reached the proxy with this method and path suffix.
func (p *proxy) requests(method, pathSuffix string) []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []seenRequest
	for _, r := range p.seen {
		if r.method == method && strings.HasSuffix(r.path, pathSuffix) {
			out = append(out, r)
		}
	}
	return out
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.seen = append(p.seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Last-Event-ID")})
	var f *fault
	for i := range p.faults {
		if p.faults[i].method == r.Method && strings.HasSuffix(r.URL.Path, p.faults[i].pathSuffix) {
			ff := p.faults[i]
			f = &ff
			p.faults = append(p.faults[:i], p.faults[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	switch {
	case f == nil:
		p.rp.ServeHTTP(w, r)
	case f.kind == dropAnswer:
		p.forwardThenHangUp(w, r)
	default:
		status := http.StatusServiceUnavailable
		code := "storage_unavailable"
		if f.kind == "429" {
			status, code = http.StatusTooManyRequests, "rate_limited"
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("X-Request-Id", "proxy-fault")
		w.Header().Set("Retry-After", f.retryAfter)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"urn:logbook:problem:%s","title":%q,"status":%d,"detail":"injected by the test proxy","code":%q,"instance":%q}`,
			code, http.StatusText(status), status, code, r.URL.Path)
	}
}

// forwardThenHangUp lets the server apply the request and read its whole
// answer, then closes the client's connection without a byte of it.
func (p *proxy) forwardThenHangUp(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, err := http.NewRequest(r.Method, p.target.String()+r.URL.RequestURI(), bytes.NewReader(body))
	if err == nil {
		req.Header = r.Header.Clone()
		var resp *http.Response
		if resp, err = http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	conn, _, herr := http.NewResponseController(w).Hijack()
	if herr != nil {
		panic(herr)
	}
	conn.Close()
}
