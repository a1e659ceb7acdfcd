package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
)

// urlAttr finds every attribute of the page that names something to load or go to.
var urlAttr = regexp.MustCompile(`(?i)\b(src|href|spec-url|action|srcset|data|poster|content)\s*=\s*["']?([^"'\s>]+)`)

// GET /docs is a page that loads everything from this server: every URL it
// names resolves to the server's own origin and answers, its script is served
// as JavaScript, and its Content-Security-Policy keeps the browser from
// fetching anything elsewhere (Redoc's bundle names a CDN logo).
func TestDocsPageIsSelfContained(t *testing.T) {
	c := newClient(t)
	page := c.do("GET", "/docs", nil).want(t, http.StatusOK, nil)
	if mt, _, _ := mime.ParseMediaType(page.Header.Get("Content-Type")); mt != "text/html" {
		t.Fatalf("Content-Type = %q, want text/html", page.Header.Get("Content-Type"))
	}
	body := string(page.Body)
	if !strings.Contains(body, "<redoc") {
		t.Errorf("the page has no <redoc> element:\n%s", body)
	}
	for _, bad := range []string{"http:", "https:", "//"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page names %q, an absolute or protocol-relative URL:\n%s", bad, body)
		}
	}

	base, _ := url.Parse(c.base + "/docs")
	var urls []string
	for _, m := range urlAttr.FindAllStringSubmatch(body, -1) {
		if m[1] == "content" && !strings.Contains(m[2], "/") {
			continue // <meta content="width=device-width, …">
		}
		ref, err := url.Parse(m[2])
		if err != nil {
			t.Errorf("%s=%q: %v", m[1], m[2], err)
			continue
		}
		abs := base.ResolveReference(ref)
		if abs.Scheme != base.Scheme || abs.Host != base.Host {
			t.Errorf("%s=%q resolves to %s, another origin than %s", m[1], m[2], abs, base.Host)
		}
		urls = append(urls, abs.Path)
	}
	for _, want := range []string{"/openapi.yaml", "/docs/redoc.standalone.js"} {
		found := false
		for _, u := range urls {
			found = found || u == want
		}
		if !found {
			t.Errorf("the page does not load %s (it names %v)", want, urls)
		}
	}
	for _, u := range urls {
		if u == "/ui/" { // the dashboard: files, not an API route (internal/ui tests them)
			res, err := http.Get(c.base + u)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET %s, named by the page: %d", u, res.StatusCode)
			}
			continue
		}
		if res := c.do("GET", u, nil); res.Status != http.StatusOK {
			t.Errorf("GET %s, named by the page: %d", u, res.Status)
		}
	}

	csp := page.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "img-src 'self' data:"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	for _, bad := range []string{"http", "*", "unsafe-eval"} {
		if strings.Contains(csp, bad) {
			t.Errorf("Content-Security-Policy %q allows %q", csp, bad)
		}
	}
}

// The bundle is the vendored file, as JavaScript, plain or gzipped, and
// revalidates with its ETag.
func TestDocsScript(t *testing.T) {
	c := newClient(t)
	vendored, err := os.ReadFile("docs/redoc.standalone.js")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		encoding string // Accept-Encoding sent ("identity": none taken)
		gzipped  bool
	}{
		{"plain", "identity", false},
		{"gzipped_for_a_client_that_takes_it", "gzip", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := c.do("GET", "/docs/redoc.standalone.js", nil, "Accept-Encoding", tc.encoding).want(t, http.StatusOK, nil)
			switch mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt {
			case "text/javascript", "application/javascript":
			default:
				t.Errorf("Content-Type = %q, want a JavaScript type", res.Header.Get("Content-Type"))
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
			got := res.Body
			if enc := res.Header.Get("Content-Encoding"); (enc == "gzip") != tc.gzipped {
				t.Fatalf("Content-Encoding = %q, gzipped want %v", enc, tc.gzipped)
			}
			if tc.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(res.Body))
				if err != nil {
					t.Fatal(err)
				}
				if got, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if len(res.Body) >= len(vendored)/2 {
					t.Errorf("gzipped: %d bytes of %d", len(res.Body), len(vendored))
				}
			}
			if !bytes.Equal(got, vendored) {
				t.Errorf("served %d bytes, not the vendored file's %d", len(got), len(vendored))
			}
			etag := res.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			again := c.do("GET", "/docs/redoc.standalone.js", nil, "Accept-Encoding", tc.encoding, "If-None-Match", etag)
			if again.Status != http.StatusNotModified || len(again.Body) != 0 {
				t.Errorf("If-None-Match %s: %d with %d bytes, want 304 and none", etag, again.Status, len(again.Body))
			}
		})
	}
}

// The page names the build it documents (escaped: a version is text), and
// /docs/ leads to it by a relative reference, which keeps a proxy's prefix.
func TestDocsPageNamesTheBuild(t *testing.T) {
	c := newClient(t, func(c *testConfig) { c.api.Version = "v1.2.3-4-g<b>" })
	body := string(c.do("GET", "/docs", nil).want(t, http.StatusOK, nil).Body)
	for _, want := range []string{"<title>Logbook v1.2.3-4-g&lt;b&gt; API reference</title>", "Logbook <b>v1.2.3-4-g&lt;b&gt;</b>", `<a href="ui/">`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}

	req, err := http.NewRequest("GET", c.base+"/docs/", nil)
	if err != nil {
		t.Fatal(err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "../docs" {
		t.Fatalf("/docs/: %d, Location %q; want 301 to ../docs", res.StatusCode, res.Header.Get("Location"))
	}
	if got := res.Request.URL.ResolveReference(&url.URL{Path: res.Header.Get("Location")}).Path; got != "/docs" {
		t.Errorf("/docs/ leads to %s, want /docs", got)
	}
	// A browser lands on the page.
	c.do("GET", "/docs", nil).want(t, http.StatusOK, nil)
}
