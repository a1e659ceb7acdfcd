package model

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Every append runs these checks, so they are written out rather than left to
// the struct-tag validator, whose reflection cost as much CPU as decoding the
// message. The validate tags on NewMessage and ToolCall stay as their
// specification: TestMessageChecksMatchTheTags holds the two to the same
// answers, field for field and word for word.

// selfChecked marks inputs whose Validate does all of their checking, tags
// included: Check then skips the struct-tag validator.
type selfChecked interface{ checksItsTags() }

func (*NewMessage) checksItsTags()  {}
func (*AppendBatch) checksItsTags() {}

// Validate checks one message as its tags say, naming the fields as a client
// wrote them.
func (m *NewMessage) Validate() error {
	if f := m.fieldErrors("", nil); f != nil {
		return Invalid(f...)
	}
	return nil
}

// Validate checks every message of a batch, then what tags cannot: two messages
// of one batch sharing an idempotency key.
func (b *AppendBatch) Validate() error {
	var fields []FieldError
	switch {
	case b.Messages == nil:
		fields = append(fields, FieldError{Field: "messages", Message: "is required"})
	case len(b.Messages) < 1:
		fields = append(fields, FieldError{Field: "messages", Message: "must have at least 1 items"})
	case len(b.Messages) > MaxBatch:
		fields = append(fields, FieldError{Field: "messages", Message: "must have at most 1000 items"})
	default:
		for i := range b.Messages {
			fields = b.Messages[i].fieldErrors("messages["+strconv.Itoa(i)+"].", fields)
		}
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return b.checkKeys()
}

// fieldErrors appends what is wrong with m, each field named with prefix, in
// field order, the first broken rule of each field only (as the validator does).
func (m *NewMessage) fieldErrors(prefix string, out []FieldError) []FieldError {
	bad := func(field, msg string) { out = append(out, FieldError{Field: prefix + field, Message: msg}) }
	switch m.Role {
	case "":
		bad("role", "is required")
	case RoleUser, RoleAssistant, RoleSystem, RoleTool, RoleDeveloper:
	default:
		bad("role", "must be one of: user, assistant, system, tool, developer")
	}
	if m.ClientID != nil {
		if msg := clientIDProblem(*m.ClientID); msg != "" {
			bad("client_id", msg)
		}
	}
	if m.Content.Parts != nil {
		out = partErrors(prefix+"content", m.Role, m.Content.Parts, out)
	} else if utf8.RuneCountInString(m.Content.Text) > 1048576 {
		bad("content", "must be at most 1048576 characters long")
	}
	if m.Name != nil && utf8.RuneCountInString(*m.Name) > 256 {
		bad("name", "must be at most 256 characters long")
	}
	if len(m.ToolCalls) > 0 {
		switch {
		case m.Role != RoleAssistant:
			bad("tool_calls", "is only allowed when role is assistant")
		case len(m.ToolCalls) > 128:
			bad("tool_calls", "must have at most 128 items")
		default:
			size := 0
			for i := range m.ToolCalls {
				out = m.ToolCalls[i].fieldErrors(prefix+"tool_calls["+strconv.Itoa(i)+"].", out)
				size += len(m.ToolCalls[i].Arguments) + len(m.ToolCalls[i].ProviderData)
			}
			if size > MaxToolCallBytes {
				bad("tool_calls", "the calls' arguments and provider data hold "+strconv.Itoa(size)+
					" bytes; a message's may hold at most "+strconv.Itoa(MaxToolCallBytes))
			}
		}
	}
	switch {
	case m.Role == RoleTool && m.ToolCallID == nil:
		bad("tool_call_id", "is required when role is tool")
	case m.Role != RoleTool && m.ToolCallID != nil:
		bad("tool_call_id", "is only allowed when role is tool")
	case m.ToolCallID == nil:
	case *m.ToolCallID == "":
		bad("tool_call_id", "must be at least 1 characters long")
	case utf8.RuneCountInString(*m.ToolCallID) > 256:
		bad("tool_call_id", "must be at most 256 characters long")
	}
	if raw, largest := m.rawSize(); mightNotFit(raw) {
		if n := m.RecordSize(); n > MaxRecordJSON {
			out = append(out, recordTooLarge(prefix+largest, n))
		}
	}
	if m.IsError && m.Role != RoleTool {
		bad("is_error", "is only allowed when role is tool")
	}
	if m.AgentID != nil {
		switch n := utf8.RuneCountInString(*m.AgentID); {
		case n < 1:
			bad("agent_id", "must be at least 1 characters long")
		case n > 128:
			bad("agent_id", "must be at most 128 characters long")
		}
	}
	if m.Model != nil && utf8.RuneCountInString(*m.Model) > 256 {
		bad("model", "must be at most 256 characters long")
	}
	switch {
	case m.Tokens < 0:
		bad("tokens", "must be greater than or equal to 0")
	case m.Tokens > MaxMessageTokens:
		bad("tokens", "must be at most 1000000000")
	}
	switch {
	case m.Cost < 0:
		bad("cost", "must be greater than or equal to 0")
	case m.Cost > MaxMessageCost:
		bad("cost", "must be at most 1000000")
	}
	if utf8.RuneCountInString(m.IdempotencyKey) > 255 {
		bad("idempotency_key", "must be at most 255 characters long")
	}
	if len(m.Embedding) > 0 || m.EmbeddingModel != "" {
		out = m.embeddingErrors(prefix, out)
	}
	return out
}

// embeddingErrors checks a message's own embedding: both fields or neither,
// the numbers as CheckVector says, the model's name as its tag says.
func (m *NewMessage) embeddingErrors(prefix string, out []FieldError) []FieldError {
	bad := func(field, msg string) { out = append(out, FieldError{Field: prefix + field, Message: msg}) }
	switch {
	case len(m.Embedding) == 0:
		bad("embedding", "is required with embedding_model")
	case m.EmbeddingModel == "":
		bad("embedding_model", "is required with embedding")
	default:
		if err := CheckVector(prefix+"embedding", m.Embedding); err != nil {
			out = append(out, AsError(err).Fields...)
		}
		if utf8.RuneCountInString(m.EmbeddingModel) > 256 {
			bad("embedding_model", "must be at most 256 characters long")
		}
	}
	return out
}

// MaxMessageClientID is the longest client id a message may carry, in characters.
const MaxMessageClientID = 256

// clientIDProblem says what is wrong with a message's client id, or "".
func clientIDProblem(id string) string {
	switch n := utf8.RuneCountInString(id); {
	case n == 0:
		return "must be at least 1 characters long"
	case n > MaxMessageClientID:
		return "must be at most 256 characters long"
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return "must hold no control characters and be valid UTF-8"
		}
	}
	return ""
}

// CheckMessageClientID checks a client id given elsewhere than in a message
// (a path, a rewind's to_client_id) by the same rule, naming field.
func CheckMessageClientID(field, id string) error {
	if msg := clientIDProblem(id); msg != "" {
		return Invalid(FieldError{Field: field, Message: msg})
	}
	return nil
}

// MaxToolCallBytes bounds one message's tool calls together, for the same
// reason as MaxContentBytes.
const MaxToolCallBytes = 1 << 20

func (c *ToolCall) fieldErrors(prefix string, out []FieldError) []FieldError {
	bad := func(field, msg string) { out = append(out, FieldError{Field: prefix + field, Message: msg}) }
	switch {
	case c.ID == "":
		bad("id", "is required")
	case utf8.RuneCountInString(c.ID) > 256:
		bad("id", "must be at most 256 characters long")
	}
	switch {
	case c.Name == "":
		bad("name", "is required")
	case utf8.RuneCountInString(c.Name) > 256:
		bad("name", "must be at most 256 characters long")
	}
	if !json.Valid([]byte(c.Arguments)) {
		bad("arguments", "must be a string that holds valid JSON")
	}
	return out
}
