package api

import (
	"bytes"
	"errors"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// decode reads a JSON request body into a T and validates it: size limit (413),
// media type (415), syntax (400), unknown fields and bad values (422, naming the field).
func decode[T any](s *Server, w http.ResponseWriter, r *http.Request) (T, error) {
	var v T
	body, held, err := s.readBody(w, r)
	if err != nil {
		return v, err
	}
	err = unmarshalStrict(body, &v)
	s.releaseBody(r, held) // what v holds was copied out of body
	if err != nil {
		return v, err
	}
	return v, s.check(&v)
}

// readBody enforces the media type and the route's size limit (bodylimits.go)
// and returns the body. held is what the body holds past --max-body-bytes,
// counted against the tenant's body memory until releaseBody gives it back.
// A Content-Length past the limit is refused before a byte is read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body []byte, held int64, err error) {
	if err := requireJSON(r); err != nil {
		return nil, 0, err
	}
	limit := s.maxBody
	if r.ContentLength < 0 || r.ContentLength > limit { // most bodies are announced and small: no look-up
		limit = s.bodyLimit(r)
	}
	if declaredTooLarge(w, r, limit) {
		return nil, 0, tooLarge(limit, r.ContentLength)
	}
	hold := bodyHold{m: s.bodies, tenant: tenantOf(r), free: s.maxBody}
	body, err = readAllHeld(w, r.Body, &hold, r.ContentLength, limit)
	if err != nil {
		hold.release()
		if e, ok := asTooLarge(err); ok {
			return nil, 0, e
		}
		var me *model.Error
		if errors.As(err, &me) {
			return nil, 0, me
		}
		return nil, 0, model.Errorf(model.KindBadRequest, "malformed_json", "could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		hold.release()
		return nil, 0, model.Errorf(model.KindBadRequest, "malformed_json", "request body is empty; send a JSON object")
	}
	return body, hold.held, nil
}

// releaseBody gives back what readBody held for r's body.
func (s *Server) releaseBody(r *http.Request, held int64) {
	if held > 0 {
		s.bodies.give(tenantOf(r), held)
	}
}

// declaredTooLarge reports a body whose Content-Length already says it is
// past limit, so that it is refused at once, from the header, before a byte
// of it is read: a client that announces a large body and sends none would
// otherwise hold the handler until the read deadline. The connection then
// closes after the answer.
//
// Closing a connection with unread bytes in it resets it, and a client still
// sending its body may then lose the answer along with the connection. So a
// body that net/http would drain after the handler (at most
// drainRefusedBytes) is drained, for at most drainRefusedFor, after the
// answer is sent (full duplex, so the answer does not wait for it); a
// larger one is not read at all (its read deadline is now).
func declaredTooLarge(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if r.ContentLength <= limit {
		return false
	}
	w.Header().Set("Connection", "close")
	rc := http.NewResponseController(w) // not every writer supports these
	if r.ContentLength <= drainRefusedBytes && rc.EnableFullDuplex() == nil {
		_ = rc.SetReadDeadline(time.Now().Add(drainRefusedFor))
		return true
	}
	_ = rc.SetReadDeadline(time.Now())
	return true
}

// What a refused body may cost the server to drain: net/http's own bound on
// what it reads of a body a handler left (maxPostHandlerReadBytes), and a
// short while.
const (
	drainRefusedBytes = 256 << 10
	drainRefusedFor   = time.Second
)

func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return model.Errorf(model.KindUnsupported, "unsupported_media_type",
			"Content-Type must be application/json, not %q", ct)
	}
	return nil
}

// unmarshalStrict decodes exactly one JSON object under the strict rules that
// every body and import line share (model.DecodeJSON).
func unmarshalStrict(body []byte, v any) error { return model.DecodeJSON(body, v) }

// check runs the input's rules (model.Check).
func (s *Server) check(v any) error { return model.Check(v) }
