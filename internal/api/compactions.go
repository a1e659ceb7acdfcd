package api

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

func (s *Server) createCompaction(w http.ResponseWriter, r *http.Request) {
	in, lift, err := decodeWithMessages(s, w, r, func(in *model.CreateCompaction) []model.NewMessage { return in.Messages })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in.BoundUser = principalOf(r).UserID
	c, err := s.store.CreateCompaction(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	lift.restore(c.Messages)
	s.writeJSON(w, r, http.StatusCreated, c)
}

func (s *Server) listCompactions(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "limit", "cursor")
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListCompactions(r.Context(), tenantOf(r), chi.URLParam(r, "id"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, page)
}

// sessionContext answers what the next LLM call needs, in one read.
func (s *Server) sessionContext(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "max_tokens", "include")
	var cq model.ContextQuery
	if v := q.str("max_tokens"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			q.fail("max_tokens", "must be a non-negative integer")
		}
		cq.MaxTokens = &n
	}
	cq.IncludeBlocks = q.oneOf("include", "blocks") == "blocks"
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.store.Context(r.Context(), tenantOf(r), chi.URLParam(r, "id"), cq)
	if err == nil {
		_, err = s.inflate(r.Context(), tenantOf(r), c.Messages, 0)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := model.AppendContextJSON(make([]byte, 0, 512*len(c.Messages)+1024), &c)
	if err != nil {
		s.writeError(w, r, model.Internal(err))
		return
	}
	s.writeBody(w, http.StatusOK, b)
}
