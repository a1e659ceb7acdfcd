package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// Keys are managed per tenant: an admin key sees and makes only its own tenant's
// keys. New tenants are made with the CLI (`logbook keys create --tenant`).

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.CreateAPIKey](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	k, err := s.store.CreateAPIKey(r.Context(), tenantOf(r), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.open.forget()
	w.Header().Set("Cache-Control", "no-store") // the key text is in this body
	s.writeJSON(w, r, http.StatusCreated, k)
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "limit", "cursor")
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListAPIKeys(r.Context(), tenantOf(r), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, page)
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.store.RevokeAPIKey(r.Context(), tenantOf(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.open.forget()
	s.writeJSON(w, r, http.StatusOK, k)
}
