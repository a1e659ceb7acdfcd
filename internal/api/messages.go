package api

import (
	"net/http"
	"net/url"
	"reflect"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// appendMessages takes one message, or {"messages": [...]} for an all-or-nothing
// batch. A replay of an idempotent request answers 200 with what was stored.
func (s *Server) appendMessages(w http.ResponseWriter, r *http.Request) {
	if isNDJSON(r) {
		s.appendStream(w, r)
		return
	}
	req, lift, err := s.decodeAppend(w, r, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.storeAppend(w, r, req, lift)
}

// storeAppend appends what decodeAppend read and answers in the request's shape:
// a Message for one message, {"data": [...]} for a batch, its data: URLs as
// the request sent them (lift).
func (s *Server) storeAppend(w http.ResponseWriter, r *http.Request, req model.AppendRequest, lift *inlineLift) {
	res, err := s.store.AppendMessages(r.Context(), tenantOf(r), chi.URLParam(r, "id"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	lift.restore(res.Messages)
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if req.Batch {
		b := model.AppendMessagesJSON(append(make([]byte, 0, 512*len(res.Messages)), `{"data":`...), res.Messages)
		s.writeBody(w, status, append(b, '}'))
		return
	}
	s.writeBody(w, status, model.AppendMessageJSON(make([]byte, 0, 1024), &res.Messages[0]))
}

// appendBody is either one message or {"messages": [...]}; one strict pass
// decodes both, and errors name the field as the client wrote it
// ("messages[3].role").
type appendBody struct {
	model.NewMessage
	Messages        *[]*model.NewMessage `json:"messages"` // a null item stays visible as nil
	ExpectedLastSeq *int64               `json:"expected_last_seq"`
}

// decodeAppend reads either shape, or with batchOnly only {"messages": [...]};
// the large data: URLs of what it read are stored as files (inline.go) once
// the messages passed their checks, and lift says how to answer them.
func (s *Server) decodeAppend(w http.ResponseWriter, r *http.Request, batchOnly bool) (model.AppendRequest, *inlineLift, error) {
	req, err := s.readAppend(w, r, batchOnly)
	if err != nil {
		return req, nil, err
	}
	field := func(int) string { return "" }
	if req.Batch {
		field = batchField
	}
	lift, err := s.liftInline(r, req.Messages, field)
	if err != nil {
		return req, nil, err
	}
	if req.Batch {
		b := model.AppendBatch{Messages: req.Messages}
		err = s.check(&b)
	} else {
		err = s.check(&req.Messages[0])
	}
	if err != nil {
		lift.release()
		return req, nil, err
	}
	return req, lift, lift.storeFiles(r, s)
}

// batchField names a batch's message i as a client does.
func batchField(i int) string { return "messages[" + strconv.Itoa(i) + "]." }

// readAppend reads either shape, unchecked.
func (s *Server) readAppend(w http.ResponseWriter, r *http.Request, batchOnly bool) (model.AppendRequest, error) {
	req := model.AppendRequest{RequestKey: r.Header.Get("Idempotency-Key"), BoundUser: principalOf(r).UserID}
	if err := model.CheckIdempotencyKey(req.RequestKey); err != nil {
		return req, err
	}
	body, held, err := s.readBody(w, r)
	if err != nil {
		return req, err
	}
	var in appendBody
	err = unmarshalStrict(body, &in)
	s.releaseBody(r, held)
	if err != nil {
		return req, err
	}
	if e := in.ExpectedLastSeq; e != nil {
		if *e < 0 {
			return req, model.Invalid(model.FieldError{Field: "expected_last_seq", Message: "must be greater than or equal to 0"})
		}
		req.ExpectedLastSeq = e
	}
	if in.Messages == nil && batchOnly {
		return req, model.Invalid(model.FieldError{Field: "messages",
			Message: "is required: this route takes a batch {\"messages\": [...]}; send one message to POST /v1/sessions/{id}/messages"})
	}
	if in.Messages == nil {
		req.Messages = []model.NewMessage{in.NewMessage}
		return req, nil
	}
	if !reflect.ValueOf(in.NewMessage).IsZero() {
		return req, model.Invalid(model.FieldError{Field: "messages",
			Message: "a batch holds only \"messages\": put every other field inside its message"})
	}
	req.Batch = true
	batch := model.AppendBatch{Messages: make([]model.NewMessage, len(*in.Messages))}
	for i, m := range *in.Messages {
		if m == nil {
			return req, model.Invalid(model.FieldError{Field: "messages[" + strconv.Itoa(i) + "]", Message: "must be an object, not null"})
		}
		batch.Messages[i] = *m
	}
	req.Messages = batch.Messages
	return req, nil
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
	if err == nil {
		err = s.inflatePage(r.Context(), tenantOf(r), chi.URLParam(r, "id"), f, &page)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTagged(w, r, model.AppendMessagePageJSON(make([]byte, 0, 512*len(page.Data)+64), &page))
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	m, err := s.store.GetMessage(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "message_id"))
	s.writeMessage(w, r, m, err)
}

// getMessageByClientID reads a message by the client's own id of it.
//
// Threat model: a client id is looked up only in the history of a session
// the key may read (the route's session goes through userBound, as every
// session route does), so it tells nothing about other sessions; an append's
// client_id_taken names the seq of the caller's own message. What one client
// can make the server do: a look-up per segment of the session's lineage (a
// fork chain's depth), per request, and 256 characters an id.
func (s *Server) getMessageByClientID(w http.ResponseWriter, r *http.Request) {
	cid := chi.URLParam(r, "client_id")
	if r.URL.RawPath != "" { // chi routed on the escaped path: its params are escaped too
		if u, err := url.PathUnescape(cid); err == nil {
			cid = u
		}
	}
	if err := model.CheckMessageClientID("client_id", cid); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.store.GetMessageByClientID(r.Context(), tenantOf(r), chi.URLParam(r, "id"), cid)
	s.writeMessage(w, r, m, err)
}

// writeMessage answers one message read, its data: URLs whole.
func (s *Server) writeMessage(w http.ResponseWriter, r *http.Request, m model.Message, err error) {
	if err == nil {
		ms := []model.Message{m}
		_, err = s.inflate(r.Context(), tenantOf(r), ms, 0)
		m = ms[0]
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeBody(w, http.StatusOK, model.AppendMessageJSON(make([]byte, 0, 1024), &m))
}
