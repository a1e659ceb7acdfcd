package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// repairSession applies resume's automatic repairs. Like a rewind it is fenced
// by expected_last_seq, not an Idempotency-Key: it is idempotent by nature.
func (s *Server) repairSession(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Idempotency-Key") != "" {
		s.writeError(w, r, model.Invalid(model.FieldError{Field: "Idempotency-Key",
			Message: "does not apply to a repair: it is idempotent; fence it with expected_last_seq"}))
		return
	}
	in, err := decode[model.RepairSession](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.store.RepairSession(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}
