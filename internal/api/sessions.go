package api

import (
	"fmt"
	"net/http"
	"sort"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.CreateSession](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if user := principalOf(r).UserID; user != "" {
		if in.UserID != nil && *in.UserID != user {
			s.writeError(w, r, model.ForbiddenForUser(user))
			return
		}
		in.UserID, in.UserSpace = &user, true
	}
	ses, err := s.store.CreateSession(r.Context(), tenantOf(r), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+ses.ID)
	s.writeJSON(w, r, http.StatusCreated, ses)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	ses, err := s.store.GetSession(r.Context(), tenantOf(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTaggedJSON(w, r, ses)
}

// listSessions lists a page of the tenant's sessions (a key bound to a user:
// that user's). Threat model: a request reads its own tenant's rows only, and
// holds nothing past its answer. The most one request makes the store read:
// a title filter's trigram probe (at most titleDriveMax index rows, SQLite),
// then at most every session of the tenant, as a metadata filter may; with
// count=true, at most model.SessionCountMax+1 more. The title it searches
// for is at most model.MaxTitleFilter characters.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "status", "agent_id", "user_id", "metadata.*", "created_after", "created_before", "due_before",
		"title", "order", "count", "limit", "cursor")
	f := model.SessionFilter{
		Status:        model.Status(q.oneOf("status", "created", "active", "completed", "archived")),
		AgentID:       q.str("agent_id"),
		UserID:        q.str("user_id"),
		CreatedAfter:  q.time("created_after"),
		CreatedBefore: q.time("created_before"),
		DueBefore:     q.time("due_before"),
		Title:         q.str("title"),
		Oldest:        q.oneOf("order", "desc", "asc") == "asc",
	}
	if utf8.RuneCountInString(f.Title) > model.MaxTitleFilter {
		q.fail("title", fmt.Sprintf("must be at most %d characters long", model.MaxTitleFilter))
	}
	count := q.flag("count")
	for name, values := range q.v {
		if key, ok := metadataKey(name); ok {
			for _, v := range values {
				f.Metadata = append(f.Metadata, model.MetadataMatch{Key: key, Value: v})
			}
		}
	}
	// a fixed order makes the filter, and so its cursors, independent of how the
	// client ordered its query string
	sort.Slice(f.Metadata, func(i, j int) bool {
		a, b := f.Metadata[i], f.Metadata[j]
		return a.Key < b.Key || (a.Key == b.Key && a.Value < b.Value)
	})
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	if user := principalOf(r).UserID; user != "" {
		if f.UserID != "" && f.UserID != user {
			out := model.SessionPage{Page: model.Page[model.Session]{Data: []model.Session{}}}
			if count {
				out.Total = &model.SessionCount{Exact: true}
			}
			s.writeJSON(w, r, http.StatusOK, out)
			return
		}
		f.UserID = user
	}
	page, err := s.store.ListSessions(r.Context(), tenantOf(r), f, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := model.SessionPage{Page: page}
	if count {
		// Asked for only: it reads the rows a list's filters select, up to
		// model.SessionCountMax of them, where a page reads one page.
		n, err := s.store.CountSessions(r.Context(), tenantOf(r), f)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out.Total = &n
	}
	if user := principalOf(r).UserID; user != "" {
		// The cursor carries the last session's id: the one the user chose.
		// Its sessions sort the same by either (model.UserSessionID), so the
		// cursor it sends back needs no translation.
		out.NextCursor = repo.RewriteCursorID(out.NextCursor, func(id string) string { return model.ShownSessionID(id, user) })
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

func (s *Server) updateSession(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.UpdateSession](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ses, err := s.store.UpdateSession(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, ses)
}

// closeSession is a soft close: nothing is deleted. With ?purge=true it is a hard
// delete instead (see purgeSession).
func (s *Server) closeSession(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "purge")
	purge := q.boolean("purge")
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	if purge {
		s.purgeSession(w, r)
		return
	}
	ses, err := s.store.CloseSession(r.Context(), tenantOf(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, ses)
}
