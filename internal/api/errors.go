package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// problem is an RFC 9457 problem details body.
type problem struct {
	Type     string             `json:"type"`
	Title    string             `json:"title"`
	Status   int                `json:"status"`
	Detail   string             `json:"detail"`
	Code     string             `json:"code"`
	Instance string             `json:"instance,omitempty"`
	Errors   []model.FieldError `json:"errors,omitempty"`
	From     any                `json:"from,omitempty"` // invalid_transition: the current status
	To       any                `json:"to,omitempty"`   // invalid_transition: the refused status
	// LatestIteration is, for stale_iteration, the iteration a worker must resume from.
	LatestIteration any `json:"latest_iteration,omitempty"`
	// ID names the damaged object of a corrupted problem.
	ID any `json:"id,omitempty"`
	// LastSeq is, for stale_seq, the session's last_seq that the caller missed.
	LastSeq any `json:"last_seq,omitempty"`
	// Line is, in an NDJSON stream's answer, the line of the body that failed.
	Line *int `json:"line,omitempty"`
}

// statusOf is the one table from error kind to HTTP status.
func statusOf(k model.Kind) int {
	switch k {
	case model.KindInvalid:
		return http.StatusUnprocessableEntity
	case model.KindBadRequest:
		return http.StatusBadRequest
	case model.KindNotFound:
		return http.StatusNotFound
	case model.KindConflict:
		return http.StatusConflict
	case model.KindPrecondition:
		return http.StatusPreconditionFailed
	case model.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case model.KindUnsupported:
		return http.StatusUnsupportedMediaType
	case model.KindUnavailable:
		return http.StatusServiceUnavailable
	case model.KindNotAllowed:
		return http.StatusMethodNotAllowed
	case model.KindUnauthorized:
		return http.StatusUnauthorized
	case model.KindForbidden:
		return http.StatusForbidden
	case model.KindRateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// writeError is the only place an error becomes an HTTP answer. Causes are logged
// with the request id; the body carries only what is safe to show.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client is gone and nothing was queued: nobody reads this answer.
		s.log.Debug().Str("request_id", requestIDOf(r)).Msg("client went away")
		w.WriteHeader(499)
		return
	}
	e := model.AsError(err)
	status := statusOf(e.Kind)
	ev := s.log.Debug()
	if status >= 500 {
		ev = s.log.Error()
	}
	ev.Str("request_id", requestIDOf(r)).Str("code", e.Code).Err(err).Msg("request failed")

	p := problemOf(r, e, status)
	w.Header().Set("Content-Type", "application/problem+json")
	if status == http.StatusServiceUnavailable || (status == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "") {
		w.Header().Set("Retry-After", "1")
	}
	s.encode(w, r, status, p)
}

// problemOf is the problem+json body of an error: only what is safe to show.
func problemOf(r *http.Request, e *model.Error, status int) problem {
	p := problem{
		Type:     "urn:logbook:problem:" + e.Code,
		Title:    http.StatusText(status),
		Status:   status,
		Detail:   e.Msg,
		Code:     e.Code,
		Instance: r.URL.Path,
		Errors:   e.Fields,
	}
	if e.Kind == model.KindInternal {
		p.Detail = "internal error; the request id identifies it in the server's log"
	}
	if e.Extra != nil {
		p.From, p.To = e.Extra["from"], e.Extra["to"]
		p.LatestIteration = e.Extra["latest_iteration"]
		p.LastSeq = e.Extra["last_seq"]
		if e.Code == "corrupted" {
			p.ID = e.Extra["id"]
		}
	}
	return p
}

// appendProblemJSON appends p as one line of JSON (no newline).
func appendProblemJSON(b []byte, p problem) []byte {
	j, _ := json.Marshal(p) // plain fields: cannot fail
	return append(b, j...)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, model.Errorf(model.KindNotFound, "not_found", "no route for %s %s", r.Method, r.URL.Path))
}

// methodNotAllowed answers 405 with the Allow header that RFC 9110 asks for; chi
// does not hand a custom handler the allowed methods, so ask the router.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if s.router.Match(chi.NewRouteContext(), m, r.URL.Path) {
			allowed = append(allowed, m)
			if m == http.MethodGet {
				allowed = append(allowed, http.MethodHead) // served by middleware.GetHead
			}
		}
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	s.writeError(w, r, model.Errorf(model.KindNotAllowed, "method_not_allowed", "method %s is not allowed on %s", r.Method, r.URL.Path))
}
