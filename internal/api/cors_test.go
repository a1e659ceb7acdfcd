package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func withCORS(origins ...string) testServerOption {
	return func(c *testConfig) { c.api.CORSOrigins = origins }
}

const dashboard = "https://dash.example.com"

// headerList splits a comma-separated header into its names, lower-cased.
func headerList(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for item := range strings.SplitSeq(v, ",") {
			out = append(out, strings.ToLower(strings.TrimSpace(item)))
		}
	}
	return out
}

// preflight sends a browser's CORS preflight. It is not an operation of
// openapi.yaml (a preflight is not one), so its answer is checked here rather
// than by the spec.
func preflight(t *testing.T, c *client, path, origin, method, headers string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodOptions, c.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", method)
	if headers != "" {
		req.Header.Set("Access-Control-Request-Headers", headers)
	}
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("X-Request-Id") == "" {
		t.Errorf("preflight: no X-Request-Id")
	}
	return res
}

func TestCORSOffByDefault(t *testing.T) {
	c := newClient(t)
	res := c.do("GET", "/v1/sessions", nil, "Origin", dashboard).want(t, http.StatusOK, nil)
	for name := range res.Header {
		if strings.HasPrefix(name, "Access-Control-") {
			t.Errorf("CORS is off, yet the answer has %s: %s", name, res.Header.Get(name))
		}
	}
	if slices.Contains(headerList(res.Header, "Vary"), "origin") {
		t.Errorf("CORS is off, yet the answer varies by Origin")
	}
	// A preflight is then what it always was: a method this API does not serve.
	c.do("OPTIONS", "/v1/sessions", nil, "Origin", dashboard, "Access-Control-Request-Method", "POST").
		wantProblem(t, http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestCORSOrigins(t *testing.T) {
	// Keys are required: a preflight must pass without one, the request after it not.
	c := newClient(t, withCORS(dashboard, "http://localhost:5173"), withoutOpenMode())
	key := mustKey(t, c, "default", model.ScopeAdmin).Key
	authed := c.as(key)

	cases := []struct {
		name      string
		origin    string
		wantAllow string // "" when the origin is not allowed
	}{
		{"listed_origin", dashboard, dashboard},
		{"second_listed_origin", "http://localhost:5173", "http://localhost:5173"},
		{"other_origin", "https://evil.example.com", ""},
		{"other_port", "http://localhost:5174", ""},
		{"other_scheme", "http://dash.example.com", ""},
		{"null_origin", "null", ""},
		{"no_origin", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.origin != "" {
				headers = []string{"Origin", tc.origin}
			}
			res := authed.do("POST", "/v1/sessions", map[string]any{}, headers...).want(t, http.StatusCreated, nil)
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != tc.wantAllow {
				t.Fatalf("Access-Control-Allow-Origin = %q, want %q", got, tc.wantAllow)
			}
			if !slices.Contains(headerList(res.Header, "Vary"), "origin") {
				t.Errorf("Vary = %q, want Origin in it: the answer depends on it", res.Header.Values("Vary"))
			}
			exposed := headerList(res.Header, "Access-Control-Expose-Headers")
			if tc.wantAllow == "" {
				if len(exposed) > 0 {
					t.Errorf("a refused origin got Access-Control-Expose-Headers %q", exposed)
				}
				return
			}
			// What a page needs to read: every header this API sets for a client to act on.
			for _, h := range []string{"etag", "location", "link", "retry-after", "x-request-id", "idempotent-replayed",
				"www-authenticate", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} {
				if !slices.Contains(exposed, h) {
					t.Errorf("Access-Control-Expose-Headers %q lacks %s", exposed, h)
				}
			}
		})
	}

	t.Run("preflight_needs_no_key", func(t *testing.T) {
		res := preflight(t, c, "/v1/sessions/x/messages", dashboard, "POST", "authorization, content-type, idempotency-key")
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("preflight status = %d, want 204", res.StatusCode)
		}
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != dashboard {
			t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, dashboard)
		}
		methods := headerList(res.Header, "Access-Control-Allow-Methods")
		for _, m := range []string{"get", "post", "put", "patch", "delete"} {
			if !slices.Contains(methods, m) {
				t.Errorf("Access-Control-Allow-Methods %q lacks %s", methods, m)
			}
		}
		allowed := headerList(res.Header, "Access-Control-Allow-Headers")
		for _, h := range []string{"authorization", "content-type", "idempotency-key", "if-match", "if-none-match",
			"last-event-id", "x-request-id"} {
			if !slices.Contains(allowed, h) {
				t.Errorf("Access-Control-Allow-Headers %q lacks %s", allowed, h)
			}
		}
		if res.Header.Get("Access-Control-Max-Age") == "" {
			t.Errorf("no Access-Control-Max-Age: every request would pay a preflight")
		}
		if res.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("Access-Control-Allow-Credentials sent: keys are not cookies")
		}
	})
	t.Run("preflight_from_other_origin_is_refused", func(t *testing.T) {
		// It proceeds as any keyless request: authentication refuses it.
		res := c.do("OPTIONS", "/v1/sessions", nil, "Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST")
		res.wantProblem(t, http.StatusUnauthorized, "unauthorized")
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("Access-Control-Allow-Origin = %q for a refused origin", got)
		}
	})
	t.Run("request_without_key_is_401_and_readable", func(t *testing.T) {
		res := c.do("GET", "/v1/sessions", nil, "Origin", dashboard)
		res.wantProblem(t, http.StatusUnauthorized, "unauthorized")
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != dashboard {
			t.Errorf("Access-Control-Allow-Origin = %q on the 401, want %q: the page could not read why", got, dashboard)
		}
	})
}

func TestCORSAnyOrigin(t *testing.T) {
	c := newClient(t, withCORS("*"))
	res := c.do("GET", "/v1/sessions", nil, "Origin", "https://anywhere.example").want(t, http.StatusOK, nil)
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin = %q, want *", got)
	}
	if slices.Contains(headerList(res.Header, "Vary"), "origin") {
		t.Errorf("Vary: Origin with *: the answer is the same for every origin")
	}
	if pre := preflight(t, c, "/v1/sessions", "https://anywhere.example", "GET", ""); pre.StatusCode != http.StatusNoContent {
		t.Errorf("preflight status = %d, want 204", pre.StatusCode)
	}
}
