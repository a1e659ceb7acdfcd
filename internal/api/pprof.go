package api

import (
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/go-chi/chi/v5"
)

// pprofRoutes are Go's profiling endpoints under /debug/pprof, mounted only
// with --pprof. They show the process's command line (a --db URL with its
// password), its memory and its goroutines' stacks, and a CPU profile costs
// the server while it runs: so, even when mounted, they answer only clients on
// loopback, and anyone else gets the same 404 as for a route that does not
// exist. A reverse proxy on the same host makes every client loopback: keep
// --pprof off behind one, or have the proxy refuse /debug/.
func (s *Server) pprofRoutes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.loopbackOnly)
	r.NotFound(s.notFound)
	// pprof.Index's links are relative: they work from /debug/pprof/ only.
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof" {
			http.Redirect(w, r, "/debug/pprof/", http.StatusMovedPermanently)
			return
		}
		pprof.Index(w, r)
	})
	r.Get("/cmdline", pprof.Cmdline)
	r.Get("/profile", pprof.Profile)
	r.Get("/symbol", pprof.Symbol)
	r.Post("/symbol", pprof.Symbol)
	r.Get("/trace", pprof.Trace)
	r.Get("/{profile}", pprof.Index) // heap, goroutine, allocs, block, mutex, threadcreate
	return r
}

// loopbackOnly answers 404 to a request that did not come from a loopback
// address. RemoteAddr is the TCP peer: no header can claim to be local.
func (s *Server) loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopback(r.RemoteAddr) {
			s.notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
