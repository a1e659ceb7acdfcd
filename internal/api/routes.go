package api

import (
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/logbook/logbook/internal/model"
)

// routes lists every route in one place, grouped by the scope a key needs.
func (s *Server) routes() *chi.Mux {
	r := chi.NewRouter()
	// GetHead answers HEAD on every GET route, for load balancers' health checks.
	r.Use(s.requestID, s.accessLog, s.recoverer, middleware.GetHead)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Get("/openapi.yaml", s.openapi)

	r.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate, s.rateLimit)

		r.Group(func(r chi.Router) {
			r.Use(s.require(model.ScopeRead))
			r.Get("/sessions", s.listSessions)
			r.Get("/sessions/{id}", s.getSession)
			r.Get("/sessions/{id}/messages", s.listMessages)
			r.Get("/sessions/{id}/messages/{message_id}", s.getMessage)
		})

		r.Group(func(r chi.Router) {
			r.Use(s.require(model.ScopeWrite))
			r.Post("/sessions", s.createSession)
			r.Patch("/sessions/{id}", s.updateSession)
			r.Delete("/sessions/{id}", s.closeSession)
			r.Post("/sessions/{id}/messages", s.appendMessages)
		})

		r.Group(func(r chi.Router) {
			r.Use(s.require(model.ScopeAdmin))
			r.Post("/admin/keys", s.createKey)
			r.Get("/admin/keys", s.listKeys)
			r.Delete("/admin/keys/{id}", s.revokeKey)
		})
	})
	return r
}
