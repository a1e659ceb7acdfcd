package api

import (
	"bytes"
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/logbook/logbook/internal/model"
)

// decode reads a JSON request body into a T and validates it: size limit (413),
// media type (415), syntax (400), unknown fields and bad values (422, naming the field).
func decode[T any](s *Server, w http.ResponseWriter, r *http.Request) (T, error) {
	var v T
	body, release, err := s.readBody(w, r)
	if err != nil {
		return v, err
	}
	err = unmarshalStrict(body, &v)
	release() // what v holds was copied out of body
	if err != nil {
		return v, err
	}
	return v, s.check(&v)
}

// readBody enforces the media type and the route's size limit (bodylimits.go)
// and returns the body, with release to call once it is no longer used: what
// it holds past --max-body-bytes counts against the tenant's body memory
// until then. A Content-Length past the limit is refused before a byte is
// read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, func(), error) {
	if err := requireJSON(r); err != nil {
		return nil, nil, err
	}
	limit := s.bodyLimit(r)
	if r.ContentLength > limit {
		// Unread, a body under 256 KiB would be read to its end before the
		// answer goes out (net/http drains it to keep the connection): a
		// client that announced more than it sends would wait for nothing.
		w.Header().Set("Connection", "close")
		return nil, nil, tooLarge(limit, r.ContentLength)
	}
	hold := &bodyHold{m: s.bodies, tenant: tenantOf(r), free: s.maxBody}
	body, err := readAllHeld(w, r.Body, hold, r.ContentLength, limit)
	if err != nil {
		hold.release()
		if e, ok := asTooLarge(err); ok {
			return nil, nil, e
		}
		var me *model.Error
		if errors.As(err, &me) {
			return nil, nil, me
		}
		return nil, nil, model.Errorf(model.KindBadRequest, "malformed_json", "could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		hold.release()
		return nil, nil, model.Errorf(model.KindBadRequest, "malformed_json", "request body is empty; send a JSON object")
	}
	return body, hold.release, nil
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
