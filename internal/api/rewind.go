package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// rewind removes a session's messages after to_seq (or a message named by its
// client id), and may append a new tail in the same transaction. A fenced
// rewind (expected_last_seq) retried after its answer was lost would trip on
// its own first try: its Idempotency-Key (idempotency.go) answers the retry
// with the first answer instead.
func (s *Server) rewind(w http.ResponseWriter, r *http.Request) {
	in, lift, err := decodeWithMessages(s, w, r, func(in *model.Rewind) []model.NewMessage { return in.Messages })
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
	lift.restore(res.Messages)
	s.writeJSON(w, r, http.StatusOK, res)
}

// decodeWithMessages is decode for a body that carries messages (msgs): their
// large data: URLs are lifted before the checks and stored as files after
// them (inline.go).
func decodeWithMessages[T any](s *Server, w http.ResponseWriter, r *http.Request, msgs func(*T) []model.NewMessage) (T, *inlineLift, error) {
	var v T
	body, held, err := s.readBody(w, r)
	if err != nil {
		return v, nil, err
	}
	err = unmarshalStrict(body, &v)
	s.releaseBody(r, held) // what v holds was copied out of body
	if err != nil {
		return v, nil, err
	}
	lift, err := s.liftInline(r, msgs(&v), batchField)
	if err != nil {
		return v, nil, err
	}
	if err := s.check(&v); err != nil {
		lift.release()
		return v, nil, err
	}
	return v, lift, lift.storeFiles(r, s)
}
