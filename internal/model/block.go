package model

import (
	stdjson "encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Block is one labelled piece of an agent's core memory (Letta's "persona",
// "human", …). Limit counts characters, not bytes. Version grows by one on every
// change and is the block's ETag.
//
// A block may be shared: attached under other agents (Letta's sleep-time agents
// share their primary agent's blocks this way), it is one block, one value and
// one history, seen by each agent under its own label. AgentID and Label are the
// agent and label it was read through; OwnerAgentID and OwnerLabel say where it
// is kept when that is another agent (nil for the agent's own block); SharedWith
// lists every attachment of it, whichever agent it was read through.
type Block struct {
	ID           string     `json:"id"`
	AgentID      string     `json:"agent_id"`
	Label        string     `json:"label"`
	Value        string     `json:"value"`
	Limit        int        `json:"limit"`
	Description  *string    `json:"description"`
	ReadOnly     bool       `json:"read_only"`
	Version      int64      `json:"version"`
	UpdatedAt    Time       `json:"updated_at"`
	OwnerAgentID *string    `json:"owner_agent_id"`
	OwnerLabel   *string    `json:"owner_label"`
	SharedWith   []BlockRef `json:"shared_with"`
}

// BlockRef names a block, or an attachment of one, by agent and label.
type BlockRef struct {
	AgentID string `json:"agent_id"`
	Label   string `json:"label"`
}

// MarshalJSON writes SharedWith as [] when nil: every key of a block is always
// present, and a list is never null.
func (b Block) MarshalJSON() ([]byte, error) {
	type plain Block
	if b.SharedWith == nil {
		b.SharedWith = []BlockRef{}
	}
	return stdjson.Marshal(plain(b))
}

// SeenAs presents b, read where it is kept, as agent agentID sees it under
// label: when that is another agent, b names its owner.
func (b *Block) SeenAs(agentID, label string) {
	if b.AgentID != agentID {
		owner, ownerLabel := b.AgentID, b.Label
		b.OwnerAgentID, b.OwnerLabel = &owner, &ownerLabel
	}
	b.AgentID, b.Label = agentID, label
}

// AttachBlock is the input of POST /v1/agents/{id}/blocks/attach: agent AgentID's
// block Label becomes visible under the attaching agent as As (Label when empty).
type AttachBlock struct {
	AgentID string `json:"agent_id" validate:"required"`
	Label   string `json:"label" validate:"required"`
	As      string `json:"as,omitempty"`
}

// Validate refuses labels that could not name a block, naming the field.
func (in AttachBlock) Validate() error {
	for _, f := range []struct{ name, v string }{{"label", in.Label}, {"as", in.As}} {
		if f.v != "" && !ValidLabel(f.v) {
			return Invalid(FieldError{Field: f.name, Message: "must be 1 to 64 characters of A-Z a-z 0-9 _ . : -"})
		}
	}
	return nil
}

// DefaultBlockLimit is Letta's default block size in characters.
const DefaultBlockLimit = 5000

// MaxBlockLimit bounds a block so that one cannot outgrow any request body.
const MaxBlockLimit = 1_000_000

// PutBlock is the input of PUT /v1/agents/{id}/blocks/{label}: the whole block.
type PutBlock struct {
	Value       string  `json:"value"`
	Limit       int     `json:"limit,omitempty" validate:"omitempty,min=1,max=1000000"`
	Description *string `json:"description,omitempty" validate:"omitempty,max=10000"`
	ReadOnly    bool    `json:"read_only,omitempty"`
}

// AppendBlock is the input of …/blocks/{label}/append.
type AppendBlock struct {
	Content string `json:"content" validate:"required"`
}

// ReplaceBlock is the input of …/blocks/{label}/replace: every occurrence of Old
// becomes New, as Letta's core_memory_replace does.
type ReplaceBlock struct {
	Old string `json:"old" validate:"required"`
	New string `json:"new"`
}

// ValidLabel reports whether s can name a block: 1–64 characters of [A-Za-z0-9_.:-].
func ValidLabel(s string) bool { return len(s) <= 64 && ValidClientID(s) }

// CheckLimit refuses a value longer than limit characters, saying how far over.
func CheckLimit(label, value string, limit int) error {
	n := utf8.RuneCountInString(value)
	if n <= limit {
		return nil
	}
	return &Error{Kind: KindInvalid, Code: "limit_exceeded",
		Msg: fmt.Sprintf("block %q would hold %d characters, %d over its limit of %d; shorten the text or raise the limit",
			label, n, n-limit, limit),
		Fields: []FieldError{{Field: "value", Message: fmt.Sprintf("%d characters over the limit of %d", n-limit, limit)}},
		Extra:  map[string]any{"limit": limit, "requested": n}}
}

// AppendValue is Letta's core_memory_append: the new text goes on a new line.
func AppendValue(current, content string) string {
	if current == "" {
		return content
	}
	return current + "\n" + content
}

// ReplaceValue is Letta's core_memory_replace: every occurrence, or old_not_found.
func ReplaceValue(label, current, old, new string) (string, error) {
	if !strings.Contains(current, old) {
		return "", &Error{Kind: KindInvalid, Code: "old_not_found",
			Msg:    fmt.Sprintf("Old content '%s' not found in memory block '%s'", old, label),
			Fields: []FieldError{{Field: "old", Message: "does not occur in the block"}}}
	}
	return strings.ReplaceAll(current, old, new), nil
}

// BlockExists is a rename onto a label the agent already has.
func BlockExists(label string) *Error {
	return &Error{Kind: KindConflict, Code: "block_exists", Msg: fmt.Sprintf("memory block '%s' already exists", label)}
}

// AttachedBlock is an attach of a block that is itself an attachment: attach
// the owner's block instead, so that no attachment ever points at another.
func AttachedBlock(label, owner, ownerLabel string) *Error {
	return &Error{Kind: KindConflict, Code: "block_attached",
		Msg: fmt.Sprintf("memory block '%s' is itself attached from agent %s's block '%s'; attach that block", label, owner, ownerLabel)}
}

// AlreadyAttached is a second attachment of one block under one agent.
func AlreadyAttached(label, as string) *Error {
	return &Error{Kind: KindConflict, Code: "already_attached",
		Msg: fmt.Sprintf("memory block '%s' is already attached to this agent, as '%s'", label, as)}
}

// NotAttached is a detach of a label that is the agent's own block.
func NotAttached(label string) *Error {
	return &Error{Kind: KindConflict, Code: "not_attached",
		Msg: fmt.Sprintf("memory block '%s' is this agent's own block, not an attachment; delete it instead", label)}
}

// ReadOnlyBlock is a tool's write to a block the agent may only read.
func ReadOnlyBlock(label string) *Error {
	return &Error{Kind: KindConflict, Code: "read_only",
		Msg: fmt.Sprintf("memory block '%s' is read-only; the agent cannot change it (the block API can)", label)}
}

// ErrPreconditionFailed is an If-Match that names another version.
func PreconditionFailed(label string, have int64) *Error {
	return &Error{Kind: KindPrecondition, Code: "precondition_failed",
		Msg: fmt.Sprintf("block %q is at version %d, not the one If-Match names; read it again and retry", label, have)}
}
