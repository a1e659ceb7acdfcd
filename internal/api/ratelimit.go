package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/httprate"
	"github.com/logbook/logbook/internal/model"
)

// rateLimit caps each tenant's requests per second, so that one tenant's runaway
// loop cannot take the single writer from the others.
func (s *Server) rateLimit(next http.Handler) http.Handler {
	if s.rate <= 0 {
		return next
	}
	return httprate.LimitBy(s.rate, time.Second,
		func(r *http.Request) (string, error) { return tenantOf(r), nil },
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", strconv.Itoa(1))
			s.writeError(w, r, &model.Error{Kind: model.KindRateLimited, Code: "rate_limited",
				Msg: "this tenant sent more than " + strconv.Itoa(s.rate) + " requests in a second; retry after the Retry-After seconds"})
		}),
	)(next)
}
