package model

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
)

// An export can be edited by hand or come from another server, so import holds
// what it restores to the rules an API write follows: the checks below build the
// input a client would have sent and run the same rules on it (Check), then add
// what only a stored object has. One set of rules, two ways in.

// CheckStoredSession checks a session as an export states it.
func CheckStoredSession(s Session) error {
	// A session moved into its user's own id space (UserSessionID) is
	// checked as the id its user chose.
	id := s.ID
	if s.UserID != nil {
		id = ShownSessionID(id, *s.UserID)
	}
	in := CreateSession{ID: id, AgentID: s.AgentID, UserID: s.UserID, Title: s.Title, Metadata: s.Metadata}
	if err := Check(&in); err != nil {
		return err
	}
	var fields []FieldError
	bad := func(field, msg string) { fields = append(fields, FieldError{Field: field, Message: msg}) }
	if s.ID == "" {
		bad("id", "is required")
	}
	if !s.Status.Valid() {
		bad("status", "must be one of: created, active, completed, archived")
	}
	if s.MessageCount < 0 || s.LastSeq < 0 || s.TotalTokens < 0 || s.TotalCost < 0 {
		bad("message_count", "counters must not be negative")
	}
	if s.TotalTokens > MaxTotalTokens {
		bad("total_tokens", fmt.Sprintf("must be at most %d", int64(MaxTotalTokens)))
	}
	if s.TotalCost > MaxTotalCost {
		bad("total_cost", fmt.Sprintf("must be at most %g", float64(MaxTotalCost)))
	}
	if s.ForkedAtSeq != nil && *s.ForkedAtSeq < 0 {
		bad("forked_at_seq", "must not be negative")
	}
	if s.ParentID != nil && !ValidStoredSessionID(*s.ParentID, s.UserID) {
		bad("parent_id", "must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	}
	if s.CreatedAt == 0 || s.UpdatedAt == 0 {
		bad("created_at", "created_at and updated_at are required")
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}

// CheckStoredMessage checks a message as an export states it: everything an
// append checks, then its id and time.
func CheckStoredMessage(m Message) error {
	in := NewMessage{Role: m.Role, ClientID: m.ClientID, Content: m.Content, Name: m.Name, ToolCalls: m.ToolCalls,
		ToolCallID: m.ToolCallID, AgentID: m.AgentID, Model: m.Model, Tokens: m.Tokens, Cost: m.Cost, Metadata: m.Metadata}
	if in.Content.Parts != nil { // an export writes lifted parts as stored (inline.go)
		in.Content.Parts = append([]Part(nil), in.Content.Parts...)
		markLifted(in.Content.Parts)
	}
	if err := Check(&in); err != nil {
		return err
	}
	switch {
	case !ValidClientID(m.ID):
		return Invalid(FieldError{Field: "id", Message: "must be 1 to 128 characters of A-Z a-z 0-9 _ . : -"})
	case m.CreatedAt == 0:
		return Invalid(FieldError{Field: "created_at", Message: "is required"})
	}
	return nil
}

// ParseState reads what the server uses of a checkpoint's state (anything else
// in it is the runtime's own and kept as it is) and checks it: the same for a
// PUT and for an imported checkpoint.
func ParseState(state JSON) (CheckpointState, error) {
	var st CheckpointState
	if len(state) == 0 || state[0] != '{' {
		return st, Invalid(FieldError{Field: "state", Message: "must be a JSON object"})
	}
	if err := jsonv2.Unmarshal(state, &st); err != nil {
		return st, prefixed(jsonError(err), "state")
	}
	if err := Check(&st); err != nil {
		return st, prefixed(AsError(err), "state")
	}
	return st, nil
}
