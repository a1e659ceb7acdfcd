package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.CreateAgent](s, w, r)
	if err == nil && in.Embedding != nil {
		err = in.Embedding.Check("embedding", tenantOf(r), s.embeddings.AllowedURLs)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.store.CreateAgent(r.Context(), tenantOf(r), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/agents/"+a.ID)
	s.writeJSON(w, r, http.StatusCreated, a)
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	a, err := s.store.GetAgent(r.Context(), tenantOf(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, a)
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "name", "tag", "limit", "cursor")
	f := model.AgentFilter{Name: q.str("name"), Tag: q.str("tag")}
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListAgents(r.Context(), tenantOf(r), f, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, page)
}

func (s *Server) updateAgent(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.UpdateAgent](s, w, r)
	if err == nil && in.Embedding.Set && !in.Embedding.Null {
		err = in.Embedding.Value.Check("embedding", tenantOf(r), s.embeddings.AllowedURLs)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.store.UpdateAgent(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if a.Embedding != nil && in.Embedding.Set && s.embeddings.Wake != nil {
		s.embeddings.Wake() // the passages stored before wait for it
	}
	s.writeJSON(w, r, http.StatusOK, a)
}

// deleteAgent removes the agent with its memory; its sessions stay.
func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DeleteAgent(r.Context(), tenantOf(r), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
