package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/feed"
)

// RequestObserver is told of every request the server answered, after its
// answer: cmd/server hands it internal/metrics' registry. It runs on the
// request's goroutine and must not block.
type RequestObserver interface {
	// ObserveRequest gets the route's pattern ("/v1/sessions/{id}"), never the
	// raw path, so that its label has as many values as there are routes; ""
	// when no route matched.
	ObserveRequest(method, route string, status int, took time.Duration)
}

// ItemObserver is told how many item store operations the server did, by
// operation (get, put, delete, search, list_namespaces), whether a route or
// a batch asked for them. A RequestObserver that is one is told.
type ItemObserver interface {
	ItemOperations(op string, n int)
}

// routePattern is the pattern of the route that answered r. Read after the
// router ran: chi fills the routing context, which the outer middleware
// shares, as it descends.
func routePattern(r *http.Request) string {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return ""
	}
	return rc.RoutePattern()
}

// FeedStats reports the live feed's figures (readers, events), for metrics.
func (s *Server) FeedStats() feed.Stats {
	if s.feed == nil {
		return feed.Stats{}
	}
	return s.feed.Stats()
}
