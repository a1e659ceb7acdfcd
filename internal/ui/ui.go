// Package ui is the dashboard served at /ui: hand-written HTML, ES modules and
// CSS embedded in the binary, with no build step and nothing fetched from
// another origin. The page is public; its calls to /v1 carry the key the user
// types in, kept in the tab's sessionStorage.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

// Prefix is where the dashboard is mounted.
const Prefix = "/ui"

//go:embed static
var static embed.FS

// csp allows the page its own scripts, styles and API, images it made itself
// (blob: URLs of files fetched with the key, data: URLs stored in messages),
// and nothing else: no inline script or style, no frame, no other origin.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve: its bytes, a gzipped copy when
// that is smaller, and the strong ETag both share.
type asset struct {
	body  []byte
	gz    []byte
	ctype string
	etag  string
}

// Handler serves the dashboard's files under Prefix: Prefix itself redirects
// to Prefix + "/", which is index.html.
func Handler() http.Handler {
	return &handler{assets: embedded()}
}

// embedded reads and compresses the files once per process, however many
// servers (tests start hundreds) mount them.
var embedded = sync.OnceValue(func() map[string]*asset {
	assets, err := load(static)
	if err != nil {
		panic("ui: " + err.Error()) // the files are compiled in: only a broken build gets here
	}
	return assets
})

type handler struct {
	assets map[string]*asset
}

func load(fsys fs.FS) (map[string]*asset, error) {
	root, err := fs.Sub(fsys, "static")
	if err != nil {
		return nil, err
	}
	assets := map[string]*asset{}
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := &asset{body: body, ctype: contentType(name), etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		if zw.Close() == nil && buf.Len() < len(body) {
			a.gz = buf.Bytes()
		}
		assets["/"+name] = a
		return nil
	})
	return assets, err
}

// contentType names the types the dashboard's files have; a file of any other
// kind is served as bytes.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".json":
		return "application/json"
	}
	return "application/octet-stream"
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if name == "" {
		http.Redirect(w, r, Prefix+"/", http.StatusMovedPermanently)
		return
	}
	if name == "/" {
		name = "/index.html"
	}
	a := h.assets[name]
	if a == nil {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	// Not fingerprinted (no build step), so every load asks, and an unchanged
	// file costs a 304.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	hd.Add("Vary", "Accept-Encoding")
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", a.ctype)
	body := a.body
	if a.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = a.gz
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// etagMatches reads If-None-Match: "*", or a list of tags compared weakly.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// acceptsGzip says whether Accept-Encoding takes gzip: named with a non-zero
// q, or not named while "*" is.
func acceptsGzip(header string) bool {
	gz, star := -1.0, -1.0
	for _, item := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(item), ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			gz = q
		case "*":
			star = q
		}
	}
	if gz >= 0 {
		return gz > 0
	}
	return star > 0
}
