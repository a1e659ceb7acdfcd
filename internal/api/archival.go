package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

func (s *Server) createPassage(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.CreatePassage](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in.ServerEmbeds = s.embeddings.Default != nil
	p, err := s.store.CreatePassage(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if p.EmbeddingState != nil && *p.EmbeddingState == model.EmbeddingPending && s.embeddings.Wake != nil {
		s.embeddings.Wake()
	}
	w.Header().Set("Location", r.URL.Path+"/"+p.ID)
	s.writeJSON(w, r, http.StatusCreated, p)
}

func (s *Server) listPassages(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "limit", "cursor")
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListPassages(r.Context(), tenantOf(r), chi.URLParam(r, "id"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, page)
}

func (s *Server) getPassage(w http.ResponseWriter, r *http.Request) {
	p, err := s.store.GetPassage(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "passage_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, p)
}

func (s *Server) deletePassage(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DeletePassage(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "passage_id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type passageHits struct {
	Data []model.PassageHit `json:"data"`
}

func (s *Server) searchPassages(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "q", "mode", "query_embedding", "tags", "after", "before", "limit")
	in := model.PassageSearch{Mode: q.oneOf("mode", model.SearchKeyword, model.SearchVector, model.SearchHybrid),
		Tags: q.list("tags"), After: q.time("after"), Before: q.time("before"), Limit: q.page().Limit}
	if in.Mode != model.SearchVector || !q.has("query_embedding") {
		in.Query = q.required("q")
	}
	in.QueryEmbedding = q.floats("query_embedding")
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.runPassageSearch(w, r, in)
}

// passageSearchBody is the body of POST /v1/agents/{id}/archival/search, the
// form of the search for query embeddings too long for a query string.
type passageSearchBody struct {
	Mode           string      `json:"mode,omitempty" validate:"omitempty,oneof=keyword vector hybrid"`
	Q              string      `json:"q,omitempty" validate:"max=10000"`
	QueryEmbedding []float32   `json:"query_embedding,omitempty" validate:"max=8192"`
	Tags           []string    `json:"tags,omitempty" validate:"max=64"`
	After          *model.Time `json:"after,omitempty"`
	Before         *model.Time `json:"before,omitempty"`
	Limit          int         `json:"limit,omitempty" validate:"min=0,max=200"`
}

func (s *Server) searchPassagesPost(w http.ResponseWriter, r *http.Request) {
	b, err := decode[passageSearchBody](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case strings.TrimSpace(b.Q) != "":
	case b.Mode == model.SearchVector && len(b.QueryEmbedding) == 0:
		s.writeError(w, r, model.Invalid(model.FieldError{Field: "query_embedding", Message: "is required for mode vector, or q for the server to embed"}))
		return
	case b.Mode != model.SearchVector:
		s.writeError(w, r, model.Invalid(model.FieldError{Field: "q", Message: "is required for mode keyword and hybrid"}))
		return
	}
	in := model.PassageSearch{Mode: b.Mode, Query: strings.TrimSpace(b.Q), QueryEmbedding: b.QueryEmbedding, Tags: b.Tags,
		After: b.After, Before: b.Before, Limit: repo.PageRequest{Limit: b.Limit}.Clamp()}
	s.runPassageSearch(w, r, in)
}

func (s *Server) runPassageSearch(w http.ResponseWriter, r *http.Request, in model.PassageSearch) {
	var err error
	if in.QueryEmbedding, err = s.queryEmbedding(r, in.Mode, chi.URLParam(r, "id"), in.Query, in.QueryEmbedding); err != nil {
		s.writeError(w, r, err)
		return
	}
	hits, err := s.store.SearchPassages(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, passageHits{hits})
}

// queryEmbedding is the query embedding a search by meaning compares with:
// the client's, or else q embedded by the endpoint of agentID's memory.
func (s *Server) queryEmbedding(r *http.Request, mode, agentID, q string, given []float32) ([]float32, error) {
	if mode != model.SearchVector && mode != model.SearchHybrid || len(given) > 0 || q == "" {
		return given, nil
	}
	if s.embeddings.Query == nil {
		return nil, model.Invalid(model.FieldError{Field: "query_embedding",
			Message: "is required: this server computes no embeddings (--embedding-url) to embed q"})
	}
	return s.embeddings.Query.EmbedQuery(r.Context(), tenantOf(r), agentID, q)
}

// searchMessages serves both the agent's conversation search and the tenant-wide
// one (no {id} in the route).
func (s *Server) searchMessages(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "q", "mode", "query_embedding", "role", "session_id", "after", "before", "limit")
	in := model.MessageSearch{Mode: q.oneOf("mode", model.SearchKeyword, model.SearchVector, model.SearchHybrid),
		AgentID: chi.URLParam(r, "id"), SessionID: q.str("session_id"),
		After: q.time("after"), Before: q.time("before"), Limit: q.page().Limit, QueryEmbedding: q.floats("query_embedding")}
	if in.Mode != model.SearchVector || !q.has("query_embedding") {
		in.Query = q.required("q")
	}
	for _, role := range q.list("role") {
		switch model.Role(role) {
		case model.RoleUser, model.RoleAssistant, model.RoleSystem, model.RoleDeveloper, model.RoleTool:
			in.Roles = append(in.Roles, model.Role(role))
		default:
			q.fail("role", "must be one of: user, assistant, system, developer, tool")
		}
	}
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	var err error
	if in.QueryEmbedding, err = s.queryEmbedding(r, in.Mode, in.AgentID, in.Query, in.QueryEmbedding); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.store.SearchMessages(r.Context(), tenantOf(r), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}
