package api

import "net/http"

// What a browser page on an allowed origin may send and read. The request
// headers are the ones this API reads; the exposed ones are those its answers
// carry that a client acts on (CORS-safelisted ones, such as Content-Type and
// Cache-Control, need no mention). No Access-Control-Allow-Credentials: keys
// travel in Authorization, which a page sets itself, never in cookies.
const (
	corsAllowMethods  = "GET, HEAD, POST, PUT, PATCH, DELETE"
	corsAllowHeaders  = "Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, Last-Event-ID, X-Request-Id"
	corsExposeHeaders = "ETag, Location, Link, Retry-After, X-Request-Id, Idempotent-Replayed, WWW-Authenticate, " +
		"X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset"
	// Chromium caps a preflight's cache at two hours, whatever is asked.
	corsMaxAge = "7200"
)

// corsPolicy lets pages on the operator's origins (--cors-origins) call the
// API from a browser. A nil policy, the default, adds no header at all.
type corsPolicy struct {
	any     bool // "*": every origin
	origins map[string]bool
}

// newCORSPolicy takes origins as browsers send them, scheme://host[:port]
// (cmd/server checks and normalises the flag), or "*".
func newCORSPolicy(origins []string) *corsPolicy {
	if len(origins) == 0 {
		return nil
	}
	p := &corsPolicy{origins: make(map[string]bool, len(origins))}
	for _, o := range origins {
		if o == "*" {
			p.any = true
		}
		p.origins[o] = true
	}
	return p
}

// wrap answers preflights from allowed origins and marks every other answer
// to them readable. Preflights carry no Authorization, so this runs before
// authentication; the request that follows is authenticated as any other. A
// request from any other origin proceeds with no CORS header, and the browser
// keeps its answer from the page.
func (p *corsPolicy) wrap(next http.Handler) http.Handler {
	if p == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if !p.any {
			// The answer depends on Origin even when it names none: a cache must
			// not hand one origin's answer to another.
			h.Add("Vary", "Origin")
		}
		origin := r.Header.Get("Origin")
		if origin == "" || !(p.any || p.origins[origin]) {
			next.ServeHTTP(w, r)
			return
		}
		allow := origin
		if p.any {
			allow = "*" // the same for everyone, so caches may share it
		}
		h.Set("Access-Control-Allow-Origin", allow)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}
