package api

import (
	"bytes"
	"errors"
	"io"
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
	body, err := s.readBody(w, r)
	if err != nil {
		return v, err
	}
	if err := unmarshalStrict(body, &v); err != nil {
		return v, err
	}
	return v, s.check(&v)
}

// readBody enforces the media type and the size limit and returns the body.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	if declaredTooLarge(w, r, s.maxBody) {
		return nil, model.Errorf(model.KindTooLarge, "payload_too_large",
			"request body exceeds the limit of %d bytes", s.maxBody)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, model.Errorf(model.KindTooLarge, "payload_too_large",
				"request body exceeds the limit of %d bytes", tooBig.Limit)
		}
		return nil, model.Errorf(model.KindBadRequest, "malformed_json", "could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, model.Errorf(model.KindBadRequest, "malformed_json", "request body is empty; send a JSON object")
	}
	return body, nil
}

// declaredTooLarge reports a body whose Content-Length already says it is
// past limit, so that it is refused at once, from the header, before a byte
// of it is read: a client that announces a large body and sends none would
// otherwise hold the handler until the read deadline. The connection then
// closes after the answer, and its read deadline is now, so that the server
// does not wait to drain the unread body either.
func declaredTooLarge(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if r.ContentLength <= limit {
		return false
	}
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // not every writer supports it
	return true
}

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
