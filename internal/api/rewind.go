package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// rewind removes a session's messages after to_seq, and may append a new tail
// in the same transaction. A fenced rewind (expected_last_seq) retried after
// its answer was lost would trip on its own first try: its Idempotency-Key
// (idempotency.go) answers the retry with the first answer instead.
func (s *Server) rewind(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.Rewind](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in.BoundUser = principalOf(r).UserID
	res, err := s.store.Rewind(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}
