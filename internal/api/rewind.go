package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// rewind removes a session's messages after to_seq, and may append a new tail
// in the same transaction. It is fenced by expected_last_seq rather than an
// Idempotency-Key: a rewind to the same seq with the same tail ends in the same
// history however often it is sent.
func (s *Server) rewind(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Idempotency-Key") != "" {
		s.writeError(w, r, model.Invalid(model.FieldError{Field: "Idempotency-Key",
			Message: "does not apply to a rewind: fence it with expected_last_seq, and give its messages idempotency_key"}))
		return
	}
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
