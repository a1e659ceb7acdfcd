package api

import (
	"net/http"

	"github.com/logbook/logbook/internal/model"
)

// whoami tells the caller whom its key acts as. It reads nothing but the
// request's own principal, so it tells a key nothing it did not already hold:
// the tenant and scope it was made with, its id, the user it is bound to.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, model.IdentityOf(principalOf(r)))
}
