package model

import "strconv"

// Rewind is the input of POST /v1/sessions/{id}/rewind: messages after ToSeq
// leave the session; Messages, when given, are appended in the same
// transaction (a tail replaced at once, never left cut short).
type Rewind struct {
	ToSeq *int64 `json:"to_seq" validate:"required,gte=0"`
	// ToClientID keeps the message with that client id and removes what
	// follows it; FromClientID removes that message too (an edited or
	// regenerated message replaced in place). Exactly one of the three.
	ToClientID      *string      `json:"to_client_id,omitempty"`
	FromClientID    *string      `json:"from_client_id,omitempty"`
	ExpectedLastSeq *int64       `json:"expected_last_seq,omitempty" validate:"omitempty,gte=0"`
	Messages        []NewMessage `json:"messages,omitempty" validate:"omitempty,max=1000,dive"`
	// BoundUser is AppendRequest.BoundUser for Messages.
	BoundUser string `json:"-"`
}

// Validate checks the fields and the messages as a batch is checked.
func (r *Rewind) Validate() error {
	var fields []FieldError
	given := 0
	for _, set := range []bool{r.ToSeq != nil, r.ToClientID != nil, r.FromClientID != nil} {
		if set {
			given++
		}
	}
	switch {
	case given == 0:
		fields = append(fields, FieldError{Field: "to_seq", Message: "is required (or to_client_id, or from_client_id)"})
	case given > 1:
		fields = append(fields, FieldError{Field: "to_seq", Message: "give one of to_seq, to_client_id and from_client_id"})
	case r.ToSeq != nil && *r.ToSeq < 0:
		fields = append(fields, FieldError{Field: "to_seq", Message: "must be greater than or equal to 0"})
	case r.ToClientID != nil:
		if msg := clientIDProblem(*r.ToClientID); msg != "" {
			fields = append(fields, FieldError{Field: "to_client_id", Message: msg})
		}
	case r.FromClientID != nil:
		if msg := clientIDProblem(*r.FromClientID); msg != "" {
			fields = append(fields, FieldError{Field: "from_client_id", Message: msg})
		}
	}
	if r.ExpectedLastSeq != nil && *r.ExpectedLastSeq < 0 {
		fields = append(fields, FieldError{Field: "expected_last_seq", Message: "must be greater than or equal to 0"})
	}
	if len(r.Messages) > MaxBatch {
		fields = append(fields, FieldError{Field: "messages", Message: "must have at most 1000 items"})
	} else {
		for i := range r.Messages {
			fields = r.Messages[i].fieldErrors("messages["+strconv.Itoa(i)+"].", fields)
		}
	}
	if fields != nil {
		return Invalid(fields...)
	}
	if len(r.Messages) > 0 {
		b := AppendBatch{Messages: r.Messages}
		return b.checkKeys()
	}
	return nil
}

func (*Rewind) checksItsTags() {}

// ClientIDNotFound is a rewind to a client id that no message of the session has.
func ClientIDNotFound(field, id string) *Error {
	return &Error{Kind: KindNotFound, Code: "not_found", Msg: "no message of the session has client_id " + strconv.Quote(id),
		Fields: []FieldError{{Field: field, Message: "names no message of the session"}}, Extra: map[string]any{"resource": "message"}}
}

// ClientIDTaken is an append of a client id that the session's history holds.
func ClientIDTaken(field, id string, seq int64) *Error {
	return &Error{Kind: KindConflict, Code: "client_id_taken",
		Msg:    field + ": the session's message at seq " + strconv.FormatInt(seq, 10) + " has client_id " + strconv.Quote(id) + "; rewind (from_client_id) to replace it",
		Fields: []FieldError{{Field: field, Message: "is the client_id of an earlier message of the session"}},
		Extra:  map[string]any{"seq": seq}}
}

// RewindResult says what a rewind did.
type RewindResult struct {
	Session Session `json:"session"`
	// RemovedMessages counts the session's messages that left it.
	RemovedMessages int64 `json:"removed_messages"`
	// RemovedCheckpoints are the iterations of the checkpoints that described a
	// history past ToSeq, removed with it.
	RemovedCheckpoints []int64 `json:"removed_checkpoints"`
	// RemovedCompactions counts the compactions that reached past ToSeq.
	RemovedCompactions int64 `json:"removed_compactions"`
	// Messages are the messages appended after the rewind, if any.
	Messages []Message `json:"messages"`
}

// StaleSeq is a write fenced by an expected_last_seq that another write moved.
func StaleSeq(expected, lastSeq int64) *Error {
	return &Error{Kind: KindConflict, Code: "stale_seq",
		Msg:   "expected_last_seq is " + strconv.FormatInt(expected, 10) + " but the session's last_seq is " + strconv.FormatInt(lastSeq, 10) + ": another write came first",
		Extra: map[string]any{"last_seq": lastSeq}}
}

// Rewound is a retry of a write whose messages a rewind removed since: writing
// them again would quietly undo the rewind.
func Rewound(field, key string) *Error {
	return &Error{Kind: KindConflict, Code: "rewound",
		Msg:    field + ": the message(s) stored under key " + strconv.Quote(key) + " were removed by a rewind; send new ones under a new key",
		Fields: []FieldError{{Field: field, Message: "names message(s) a rewind removed"}}}
}
