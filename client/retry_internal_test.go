package client

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A 409 idempotency_in_progress is retried (its key's first try is still
// being served; this one did nothing), any other 409 is final, and the
// body stays whole for whoever reads it.
func TestRetryWaitsForAKeyInProgress(t *testing.T) {
	p := retryPolicy{attempts: 3, minWait: time.Millisecond, maxWait: time.Second}
	req, _ := http.NewRequest("POST", "http://x/v1/sessions/s/rewind", nil)
	for _, tc := range []struct {
		body  string
		again bool
	}{
		{`{"status":409,"code":"idempotency_in_progress"}`, true},
		{`{"status":409,"code":"stale_seq"}`, false},
		{`{"status":409,"code":"idempotency_applied"}`, false},
	} {
		resp := &http.Response{StatusCode: http.StatusConflict, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tc.body))}
		if _, again := p.wait(req, resp, nil, 0); again != tc.again {
			t.Errorf("%s: retried %v, want %v", tc.body, again, tc.again)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != tc.body {
			t.Errorf("the body became %q", b)
		}
	}
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/v1/sessions", true},
		{"PUT", "/v1/sessions/s/checkpoint", true},
		{"PATCH", "/v1/sessions/s/checkpoint", true},
		{"PUT", "/v1/agents/a/blocks/b", false},
		{"GET", "/v1/sessions", false},
	} {
		r, _ := http.NewRequest(tc.method, "http://x"+tc.path, nil)
		if got := keyed(r); got != tc.want {
			t.Errorf("%s %s keyed: %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}
