package api

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// writeBody writes JSON that was encoded by hand (model.AppendMessageJSON and
// friends), with the newline every answer ends with.
func (s *Server) writeBody(w http.ResponseWriter, status int, b []byte) {
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// With its length known, a page larger than net/http's 2 KiB buffer goes out
	// as it is, not in chunks.
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeJSON writes v as a JSON body with the given status.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	s.encode(w, r, status, v)
}

func (s *Server) encode(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error().Str("request_id", requestIDOf(r)).Err(err).Msg("encode response")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"type":"urn:logbook:problem:internal","title":"Internal Server Error","status":500,"detail":"internal error","code":"internal"}`))
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
