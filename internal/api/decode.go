package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/logbook/logbook/internal/model"
)

var errNotObject = model.Errorf(model.KindBadRequest, "malformed_json", "request body must be a JSON object")

// validatable is implemented by inputs with rules that struct tags cannot say.
type validatable interface{ Validate() error }

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

func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return model.Errorf(model.KindUnsupported, "unsupported_media_type",
			"Content-Type must be application/json, not %q", ct)
	}
	return nil
}

// unmarshalStrict decodes exactly one JSON object, refusing unknown fields so
// that a typo does not silently drop data.
func unmarshalStrict(body []byte, v any) error {
	// encoding/json decodes null into a struct as a no-op; a body of null, a list or
	// a number is not a request.
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return errNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber() // keep big integers in metadata exact
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return model.Errorf(model.KindBadRequest, "malformed_json", "request body must hold exactly one JSON value")
	}
	return nil
}

func decodeError(err error) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		me     *model.Error
	)
	switch {
	case errors.As(err, &me):
		return err
	case errors.As(err, &syntax):
		return model.Errorf(model.KindBadRequest, "malformed_json", "malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return model.Errorf(model.KindBadRequest, "malformed_json", "malformed JSON: the body ends too early")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return model.Errorf(model.KindBadRequest, "malformed_json", "request body must be a JSON object, not %s", typ.Value)
		}
		return model.Invalid(model.FieldError{Field: typ.Field,
			Message: fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this; its wording is part of its API.
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return model.Invalid(model.FieldError{Field: field, Message: "is not a known field"})
	}
	return model.Invalid(model.FieldError{Field: "", Message: err.Error()})
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "another type"
}

// check runs the struct-tag rules, then the input's own Validate, if any.
func (s *Server) check(v any) error {
	if err := s.validate.Struct(v); err != nil {
		return validationError(err)
	}
	if c, ok := v.(validatable); ok {
		return c.Validate()
	}
	return nil
}
