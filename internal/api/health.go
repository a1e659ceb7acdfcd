package api

import "net/http"

type status struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
}

// healthz says the process is up, and which build it is; it touches nothing else.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, status{Status: "ok", Version: s.version})
}

// readyz says the database answers reads.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Ping(r.Context()); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, status{Status: "ok"})
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(s.spec)
}
