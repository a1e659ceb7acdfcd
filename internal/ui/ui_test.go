package ui_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/ui"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestServesFilesWithTypesAndPolicy(t *testing.T) {
	h := ui.Handler()
	cases := []struct {
		path, ctype, contains string
	}{
		{"/ui/", "text/html; charset=utf-8", `<script type="module" src="js/app.js">`},
		{"/ui/index.html", "text/html; charset=utf-8", "<title>Logbook</title>"},
		{"/ui/js/app.js", "text/javascript; charset=utf-8", "import"},
		{"/ui/js/views/session.js", "text/javascript; charset=utf-8", "export async function render"},
		{"/ui/css/base.css", "text/css; charset=utf-8", ":root"},
		{"/ui/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			res := get(t, h, http.MethodGet, c.path, nil)
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status: got %d, want 200", res.StatusCode)
			}
			if got := res.Header.Get("Content-Type"); got != c.ctype {
				t.Errorf("Content-Type: got %q, want %q", got, c.ctype)
			}
			if !bytes.Contains(body, []byte(c.contains)) {
				t.Errorf("body does not contain %q", c.contains)
			}
			csp := res.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "connect-src 'self'", "img-src 'self' data: blob:", "script-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
				t.Errorf("Content-Security-Policy allows inline code: %q", csp)
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q, want nosniff", got)
			}
			if got := res.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control: got %q, want no-cache", got)
			}
			if res.Header.Get("ETag") == "" {
				t.Error("no ETag")
			}
		})
	}
}

// The page must run under its own policy: no inline script or style, and
// nothing loaded from another origin.
func TestIndexHasNoInlineCode(t *testing.T) {
	res := get(t, ui.Handler(), http.MethodGet, "/ui/", nil)
	body, _ := io.ReadAll(res.Body)
	page := string(body)
	for _, bad := range []string{"<style", " style=", " onclick=", " onload=", "javascript:", "http://", "https://", "//cdn"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html contains %q", bad)
		}
	}
	if n := strings.Count(page, "<script"); n != strings.Count(page, `<script type="module" src=`) {
		t.Errorf("index.html has an inline <script>")
	}
}

func TestRevalidatesWithETag(t *testing.T) {
	h := ui.Handler()
	first := get(t, h, http.MethodGet, "/ui/js/app.js", nil)
	etag := first.Header.Get("ETag")
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		res := get(t, h, http.MethodGet, "/ui/js/app.js", map[string]string{"If-None-Match": inm})
		if res.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match %s: got %d, want 304", inm, res.StatusCode)
		}
	}
	res := get(t, h, http.MethodGet, "/ui/js/app.js", map[string]string{"If-None-Match": `"stale"`})
	if res.StatusCode != http.StatusOK {
		t.Errorf("a stale tag: got %d, want 200", res.StatusCode)
	}
}

func TestGzipsForClientsThatTakeIt(t *testing.T) {
	h := ui.Handler()
	plain := get(t, h, http.MethodGet, "/ui/js/views/session.js", nil)
	want, _ := io.ReadAll(plain.Body)
	if plain.Header.Get("Content-Encoding") != "" {
		t.Fatalf("gzipped for a client that did not ask")
	}
	res := get(t, h, http.MethodGet, "/ui/js/views/session.js", map[string]string{"Accept-Encoding": "br, gzip"})
	if got := res.Header.Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("Content-Encoding: got %q, want gzip", got)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(zr)
	if !bytes.Equal(got, want) {
		t.Errorf("gunzipped body differs from the plain one (%d vs %d bytes)", len(got), len(want))
	}
	if res := get(t, h, http.MethodGet, "/ui/js/views/session.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); res.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzipped although q=0")
	}
}

func TestRoutesOtherThanFiles(t *testing.T) {
	h := ui.Handler()
	if res := get(t, h, http.MethodGet, "/ui", nil); res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: got %d to %q, want 301 to /ui/", res.StatusCode, res.Header.Get("Location"))
	}
	for _, p := range []string{"/ui/missing.js", "/ui/js/", "/ui/../go.mod", "/uix"} {
		if res := get(t, h, http.MethodGet, p, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: got %d, want 404", p, res.StatusCode)
		}
	}
	if res := get(t, h, http.MethodPost, "/ui/", nil); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: got %d, want 405", res.StatusCode)
	}
	res := get(t, h, http.MethodHead, "/ui/js/app.js", nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || len(body) != 0 || res.Header.Get("Content-Length") == "" {
		t.Errorf("HEAD: got %d with %d bytes (Content-Length %q), want 200, no body, a length", res.StatusCode, len(body), res.Header.Get("Content-Length"))
	}
}
