package api

import "net/http"

// appendMessageBatch is the batch half of appendMessages on a route of its own:
// one body shape ({"messages": [...]}) and one answer shape ({"data": [...]}),
// so that a generated client needs no union to read it. Idempotency, fences and
// replays are appendMessages' own; a key used on either route replays on both.
func (s *Server) appendMessageBatch(w http.ResponseWriter, r *http.Request) {
	req, lift, err := s.decodeAppend(w, r, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.storeAppend(w, r, req, lift)
}
