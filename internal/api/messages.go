package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

type messageList struct {
	Data []model.Message `json:"data"`
}

// appendMessages takes one message, or {"messages": [...]} for an all-or-nothing
// batch. A replay of an idempotent request answers 200 with what was stored.
func (s *Server) appendMessages(w http.ResponseWriter, r *http.Request) {
	req, err := s.decodeAppend(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.store.AppendMessages(r.Context(), tenantOf(r), chi.URLParam(r, "id"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if req.Batch {
		s.writeJSON(w, r, status, messageList{res.Messages})
		return
	}
	s.writeJSON(w, r, status, res.Messages[0])
}

func (s *Server) decodeAppend(w http.ResponseWriter, r *http.Request) (model.AppendRequest, error) {
	req := model.AppendRequest{RequestKey: r.Header.Get("Idempotency-Key")}
	if len(req.RequestKey) > 255 {
		return req, model.Invalid(model.FieldError{Field: "Idempotency-Key", Message: "must be at most 255 characters long"})
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return req, err
	}
	// A batch has a top-level "messages" key. Only a body that holds that text
	// anywhere needs the probe parse: a single message almost never does, and it is
	// the hot path.
	if bytes.Contains(body, []byte(`"messages"`)) {
		var probe map[string]json.RawMessage
		if json.Unmarshal(body, &probe) == nil {
			_, req.Batch = probe["messages"]
		}
	}
	if req.Batch {
		in, err := decodeBatch(body)
		if err != nil {
			return req, err
		}
		req.Messages = in.Messages
		return req, s.check(&in)
	}
	var in model.NewMessage
	if err := unmarshalStrict(body, &in); err != nil {
		return req, err
	}
	req.Messages = []model.NewMessage{in}
	return req, s.check(&in)
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "order", "after_seq", "before_seq", "role", "limit", "cursor")
	f := model.MessageFilter{
		Desc:      q.oneOf("order", "asc", "desc") == "desc",
		AfterSeq:  q.seq("after_seq"),
		BeforeSeq: q.seq("before_seq"),
		Role:      model.Role(q.oneOf("role", "user", "assistant", "system", "tool")),
	}
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.ListMessages(r.Context(), tenantOf(r), chi.URLParam(r, "id"), f, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, page)
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	m, err := s.store.GetMessage(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "message_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, m)
}

// decodeBatch decodes each message on its own so that a decoding error names the
// message it is in ("messages[3].extra"), which encoding/json alone does not.
func decodeBatch(body []byte) (model.AppendBatch, error) {
	var raw struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := unmarshalStrict(body, &raw); err != nil {
		return model.AppendBatch{}, err
	}
	out := model.AppendBatch{Messages: make([]model.NewMessage, len(raw.Messages))}
	for i, m := range raw.Messages {
		if err := unmarshalStrict(m, &out.Messages[i]); err == errNotObject {
			return out, model.Invalid(model.FieldError{Field: "messages[" + strconv.Itoa(i) + "]", Message: "must be an object"})
		} else if err != nil {
			return out, prefixFields(err, "messages["+strconv.Itoa(i)+"]")
		}
	}
	return out, nil
}

// prefixFields puts a path in front of the fields a validation error names.
func prefixFields(err error, prefix string) error {
	var e *model.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return err
	}
	fields := make([]model.FieldError, len(e.Fields))
	for i, f := range e.Fields {
		fields[i] = model.FieldError{Field: prefix + "." + f.Field, Message: f.Message}
	}
	return model.Invalid(fields...)
}
