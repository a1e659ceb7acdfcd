package api_test

import (
	"net/http"
	"testing"
)

// FuzzRequestBodies sends arbitrary bodies to the routes that decode JSON, through
// the real router and store: whatever arrives, the answer is a success or a 4xx
// problem that matches openapi.yaml, never a 5xx.
func FuzzRequestBodies(f *testing.F) {
	f.Add(uint8(0), []byte(`{"role":"user","content":"hi"}`))
	f.Add(uint8(1), []byte(`{"id":"x","metadata":{"a":1}}`))
	f.Add(uint8(2), []byte(`{"status":"completed"}`))
	c := newClient(f)
	ses := mustCreateSession(f, c, map[string]any{"id": "fuzz"})
	routes := []struct{ method, path string }{
		{"POST", "/v1/sessions/" + ses.ID + "/messages"},
		{"POST", "/v1/sessions"},
		{"PATCH", "/v1/sessions/" + ses.ID},
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := routes[int(route)%len(routes)]
		res := (&client{t: t, base: c.base, http: c.http, store: c.store}).do(r.method, r.path, body)
		if res.Status >= 500 || res.Status < 200 || (res.Status >= 300 && res.Status < 400) {
			t.Fatalf("%s %s %q → %d: %s", r.method, r.path, body, res.Status, res.Body)
		}
		if res.Status == http.StatusOK || res.Status == http.StatusCreated {
			return
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("%d with Content-Type %q", res.Status, ct)
		}
	})
}
