package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// A checkpoint write may make its session (create_session: a runtime's thread
// comes into being with its first checkpoint). For a key bound to a user the
// session it makes is that user's, in that user's id space, as POST
// /v1/sessions would make it: userRoute cannot resolve an id that does not
// exist yet, so on these routes it lets the request through unresolved and
// the handler decides once it has read create_session. Until then the
// handler must not touch the asked id: another user may hold it.
var createsSession = map[string]bool{
	"/v1/sessions/{id}/checkpoints":       true,
	"/v1/sessions/{id}/checkpoint-writes": true,
}

const unresolvedSessionKey ctxKey = iota + 210

// markUnresolved records that userRoute found no session of the bound key's
// user under the asked id.
func markUnresolved(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), unresolvedSessionKey, true))
}

// writeSessionID is the stored id a checkpoint write goes to. For a key bound
// to a user whose session does not exist yet: create makes it (owned by that
// user), else it is 404, as on every other route.
func (s *Server) writeSessionID(r *http.Request, create bool) (string, error) {
	id := chi.URLParam(r, "id")
	if unresolved, _ := r.Context().Value(unresolvedSessionKey).(bool); !unresolved {
		return id, nil
	}
	if !create {
		return "", model.NotFound("session", id)
	}
	p := principalOf(r)
	ses, err := s.store.CreateSession(r.Context(), p.Tenant, model.CreateSession{ID: id, UserID: &p.UserID, UserSpace: true})
	if model.AsError(err).Kind == model.KindConflict {
		// made meanwhile, by a retry or a concurrent write of the same user
		return s.userSession(r.Context(), p, id)
	}
	if err != nil {
		return "", err
	}
	return ses.ID, nil
}
