package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

func (s *Server) createPassage(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.CreatePassage](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.store.CreatePassage(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
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
	q := parseQuery(r, "q", "tags", "after", "before", "limit")
	in := model.PassageSearch{Query: q.required("q"), Tags: q.list("tags"), After: q.time("after"), Before: q.time("before"),
		Limit: q.page().Limit}
	if err := q.err(); err != nil {
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

// searchMessages serves both the agent's conversation search and the tenant-wide
// one (no {id} in the route).
func (s *Server) searchMessages(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "q", "role", "session_id", "after", "before", "limit")
	in := model.MessageSearch{Query: q.required("q"), AgentID: chi.URLParam(r, "id"), SessionID: q.str("session_id"),
		After: q.time("after"), Before: q.time("before"), Limit: q.page().Limit}
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
	res, err := s.store.SearchMessages(r.Context(), tenantOf(r), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}
