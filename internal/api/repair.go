package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// repairSession applies resume's automatic repairs. It is idempotent by
// nature; fenced by expected_last_seq, its retry would trip on its own first
// try, which its Idempotency-Key (idempotency.go) answers instead.
func (s *Server) repairSession(w http.ResponseWriter, r *http.Request) {
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
