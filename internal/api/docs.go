package api

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"html"
	"net/http"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// docsBundle is the vendored Redoc bundle's name under /docs/ (docs/README.md
// says where it comes from and how to update it).
const docsBundle = "redoc.standalone.js"

//go:embed docs/redoc.standalone.js
var redocJS []byte

// docsPage renders /openapi.yaml with the bundle, under a line naming the
// build it documents. Its URLs are relative, so that the page also works
// behind a proxy that serves Logbook under a path prefix: from /docs they
// resolve to /openapi.yaml, /docs/redoc.standalone.js and /ui/.
func docsPage(version string) string {
	if version == "" {
		version = "dev"
	}
	v := html.EscapeString(version)
	return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Logbook ` + v + ` API reference</title>
</head>
<body>
<p id="build" style="margin:0;padding:.4rem 1rem;font:13px system-ui,sans-serif;background:#f0f2f6;color:#1a202c">
Logbook <b>` + v + `</b> · API reference · <a href="ui/">dashboard</a></p>
<redoc spec-url="openapi.yaml"></redoc>
<script src="docs/` + docsBundle + `"></script>
</body>
</html>
`
}

// docsCSP lets the page load nothing but this server's own files: the bundle,
// the spec it fetches, and the styles it injects (Redoc styles with inline
// <style> elements, and runs its search in a Worker made from a blob). The
// bundle's one outside reference, a Redocly logo image from a CDN in the
// sidebar's footer, is blocked, and Redoc hides the image when it fails.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docs serves the API reference page.
func (s *Server) docs(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", docsCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write([]byte(docsPage(s.version)))
}

// docsSlash sends /docs/ to the page. The page's relative URLs resolve from
// /docs only, and so does this Location, under a proxy's path prefix too:
// http.Redirect would make it /docs, losing the prefix.
func (s *Server) docsSlash(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", "../docs")
	w.WriteHeader(http.StatusMovedPermanently)
}

// redocAsset is the bundle as served: its ETag, and its gzip encoding, made
// once, on the first request for it (1.1 MB goes over the wire as ~0.35 MB).
var redocAsset = sync.OnceValue(func() (a struct {
	etag string
	gz   []byte
}) {
	sum := sha256.Sum256(redocJS)
	a.etag = hex.EncodeToString(sum[:12])
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(redocJS)
	_ = zw.Close()
	a.gz = b.Bytes()
	return a
})

// docsAsset serves the bundle, gzipped for a client that takes it, with an
// ETag for revalidation: the bundle changes only with the binary.
func (s *Server) docsAsset(w http.ResponseWriter, r *http.Request) {
	a := redocAsset()
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept-Encoding")
	body, etag := redocJS, a.etag
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		body, etag = a.gz, a.etag+"-gzip"
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("ETag", `"`+etag+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}
