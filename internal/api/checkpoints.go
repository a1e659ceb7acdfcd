package api

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// putCheckpoint records the runtime's state after an iteration. A stale writer
// (iteration not above the latest, or expected_iteration not the latest) gets 409
// stale_iteration: the fence that keeps two workers from running one session.
func (s *Server) putCheckpoint(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.PutCheckpoint](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.store.PutCheckpoint(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in, s.checkpointKeep)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, c)
}

// patchCheckpoint records the next iteration as an RFC 7396 merge patch of the
// latest checkpoint's state, under putCheckpoint's fence; the answer is the
// whole checkpoint, as a PUT of the merged state would give. 409 no_checkpoint
// when there is nothing to patch yet.
func (s *Server) patchCheckpoint(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.PatchCheckpoint](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.store.PatchCheckpoint(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in, s.checkpointKeep)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusCreated, c)
}

func (s *Server) getLatestCheckpoint(w http.ResponseWriter, r *http.Request) {
	c, err := s.store.GetCheckpoint(r.Context(), tenantOf(r), chi.URLParam(r, "id"), 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTaggedJSON(w, r, c)
}

func (s *Server) getCheckpoint(w http.ResponseWriter, r *http.Request) {
	it, err := strconv.ParseInt(chi.URLParam(r, "iteration"), 10, 64)
	if err != nil || it < 1 {
		s.writeError(w, r, model.NotFound("checkpoint", chi.URLParam(r, "iteration")))
		return
	}
	c, err := s.store.GetCheckpoint(r.Context(), tenantOf(r), chi.URLParam(r, "id"), it)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTaggedJSON(w, r, c)
}

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "limit", "cursor")
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListCheckpoints(r.Context(), tenantOf(r), chi.URLParam(r, "id"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTaggedJSON(w, r, page)
}

// resume hands a session to a new worker: it reads and reports, never repairs.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	res, err := s.store.Resume(r.Context(), tenantOf(r), chi.URLParam(r, "id"))
	if err == nil {
		_, err = s.inflate(r.Context(), tenantOf(r), res.MessagesSinceCheckpoint, 0)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}

func (s *Server) forkSession(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.ForkSession](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in.UserSpace = principalOf(r).UserID != "" // the parent is the key's user's (userBound)
	ses, err := s.store.ForkSession(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+ses.ID)
	s.writeJSON(w, r, http.StatusCreated, ses)
}
