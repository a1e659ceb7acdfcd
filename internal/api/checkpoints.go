package api

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// putCheckpoint records the runtime's state after an iteration. A stale writer
// (iteration not above the latest of its namespace, or expected_iteration not
// that latest) gets 409 stale_iteration: the fence that keeps two workers from
// running one session's namespace.
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

// createCheckpoint is a graph runtime's write: the next checkpoint of a
// namespace, named by the client and hung under a parent. The answer leaves
// the state out (the client has it): 201, or 200 when the same checkpoint was
// stored before (a retry).
func (s *Server) createCheckpoint(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.CreateCheckpoint](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := s.writeSessionID(r, in.CreateSession)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, created, err := s.store.CreateCheckpoint(r.Context(), tenantOf(r), id, in, s.checkpointKeep)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c.State, c.PendingWrites = nil, nil
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	s.writeJSON(w, r, status, c)
}

// putCheckpointWrites records one task's pending writes against a checkpoint.
func (s *Server) putCheckpointWrites(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.PutCheckpointWrites](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := s.writeSessionID(r, in.CreateSession)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.store.PutCheckpointWrites(r.Context(), tenantOf(r), id, in); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// getLatestCheckpoint reads the latest checkpoint of a namespace, or the one a
// client id names.
func (s *Server) getLatestCheckpoint(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "namespace", "client_id", "parent_writes")
	sel := model.CheckpointSelector{Namespace: q.str("namespace"), ClientID: q.str("client_id"), ParentWrites: q.str("parent_writes")}
	s.readCheckpoint(w, r, q, sel)
}

func (s *Server) getCheckpoint(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "namespace", "parent_writes")
	it, err := strconv.ParseInt(chi.URLParam(r, "iteration"), 10, 64)
	if err != nil || it < 1 {
		s.writeError(w, r, model.NotFound("checkpoint", chi.URLParam(r, "iteration")))
		return
	}
	s.readCheckpoint(w, r, q, model.CheckpointSelector{Namespace: q.str("namespace"), Iteration: it, ParentWrites: q.str("parent_writes")})
}

func (s *Server) readCheckpoint(w http.ResponseWriter, r *http.Request, q *query, sel model.CheckpointSelector) {
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.store.ReadCheckpoint(r.Context(), tenantOf(r), chi.URLParam(r, "id"), sel)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTaggedJSON(w, r, c)
}

// listCheckpoints lists one session's checkpoints; listAllCheckpoints every
// session's of the tenant (those of a key's user, for a key bound to one).
func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) {
	s.findCheckpoints(w, r, chi.URLParam(r, "id"))
}

func (s *Server) listAllCheckpoints(w http.ResponseWriter, r *http.Request) {
	s.findCheckpoints(w, r, "")
}

func (s *Server) findCheckpoints(w http.ResponseWriter, r *http.Request, session string) {
	params := []string{"namespace", "metadata.*", "before", "before_namespace", "values", "parent_writes", "limit", "cursor"}
	if session == "" {
		params = append(params, "session_id", "before_session")
	}
	q := parseQuery(r, params...)
	f := model.CheckpointFilter{SessionID: session, Before: q.str("before"), BeforeNamespace: q.str("before_namespace"),
		NoValues: q.has("values") && !q.boolean("values"), ParentWrites: q.str("parent_writes"), UserID: principalOf(r).UserID}
	if session == "" {
		f.SessionID, f.BeforeSession = q.str("session_id"), q.str("before_session")
	}
	if f.Before == "" && (q.has("before_namespace") || q.has("before_session")) {
		q.fail("before", "is required with before_namespace and before_session")
	}
	if _, ok := q.v["namespace"]; ok {
		ns := q.str("namespace")
		f.Namespace = &ns
	}
	for name, values := range q.v {
		if key, ok := metadataKey(name); ok {
			for _, v := range values {
				f.Metadata = append(f.Metadata, model.MetadataMatch{Key: key, Value: v})
			}
		}
	}
	sort.Slice(f.Metadata, func(i, j int) bool { // the cursor must not depend on the query's order
		a, b := f.Metadata[i], f.Metadata[j]
		return a.Key < b.Key || (a.Key == b.Key && a.Value < b.Value)
	})
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.FindCheckpoints(r.Context(), tenantOf(r), f, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTaggedJSON(w, r, page)
}

// getCheckpointRetention answers a session's retention policy, its own or
// the server's default.
func (s *Server) getCheckpointRetention(w http.ResponseWriter, r *http.Request) {
	p, err := s.store.CheckpointRetention(r.Context(), tenantOf(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, s.retention(p))
}

func (s *Server) putCheckpointRetention(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.CheckpointRetention](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.store.SetCheckpointRetention(r.Context(), tenantOf(r), chi.URLParam(r, "id"), &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, s.retention(&in))
}

// deleteCheckpointRetention returns a session to the server's default policy.
func (s *Server) deleteCheckpointRetention(w http.ResponseWriter, r *http.Request) {
	if err := s.store.SetCheckpointRetention(r.Context(), tenantOf(r), chi.URLParam(r, "id"), nil); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, s.retention(nil))
}

func (s *Server) retention(p *model.CheckpointRetention) model.SessionRetention {
	if p == nil {
		return model.SessionRetention{CheckpointRetention: s.checkpointKeep, Default: true}
	}
	return model.SessionRetention{CheckpointRetention: *p}
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
