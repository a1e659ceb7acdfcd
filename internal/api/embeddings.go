package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/logbook/logbook/internal/model"
)

func (s *Server) getMessageEmbedding(w http.ResponseWriter, r *http.Request) {
	e, err := s.store.GetMessageEmbedding(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "message_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, e)
}

// putMessageEmbedding stores the client's embedding of a message, for
// conversation search by meaning without a server endpoint.
func (s *Server) putMessageEmbedding(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.PutMessageEmbedding](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.store.PutMessageEmbedding(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "message_id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, e)
}

// tenantEmbedding is the answer of GET and PUT /v1/admin/embedding.
type tenantEmbedding struct {
	Embedding *model.EmbeddingConfig `json:"embedding"`
}

func (s *Server) getTenantEmbedding(w http.ResponseWriter, r *http.Request) {
	c, err := s.store.TenantEmbedding(r.Context(), tenantOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, tenantEmbedding{c})
}

// putTenantEmbedding sets the endpoint of the tenant's agents that name none.
func (s *Server) putTenantEmbedding(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.EmbeddingConfig](s, w, r)
	if err == nil {
		err = in.Check("embedding", tenantOf(r), s.embeddings.AllowedURLs)
	}
	if err == nil {
		err = s.store.SetTenantEmbedding(r.Context(), tenantOf(r), &in)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.embeddings.Wake != nil {
		s.embeddings.Wake() // the passages stored before wait for it
	}
	s.writeJSON(w, r, http.StatusOK, tenantEmbedding{&in})
}

func (s *Server) deleteTenantEmbedding(w http.ResponseWriter, r *http.Request) {
	if err := s.store.SetTenantEmbedding(r.Context(), tenantOf(r), nil); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// toolSearchMode is how a memory tool searches: by meaning and keywords
// (hybrid) when an endpoint can embed the query as the agent's memory is
// embedded, else by keywords alone, as Letta's tools do without one: an
// agent's tool call must not fail because an endpoint is slow or missing.
func (s *Server) toolSearchMode(ctx context.Context, tenant, agentID, q string) (string, []float32) {
	if s.embeddings.Query == nil || strings.TrimSpace(q) == "" {
		return model.SearchKeyword, nil
	}
	v, err := s.embeddings.Query.EmbedQuery(ctx, tenant, agentID, q)
	if err != nil {
		return model.SearchKeyword, nil
	}
	return model.SearchHybrid, v
}
