package model

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Block is one labelled piece of an agent's core memory (Letta's "persona",
// "human", …). Limit counts characters, not bytes. Version grows by one on every
// change and is the block's ETag.
type Block struct {
	ID          string  `json:"id"`
	AgentID     string  `json:"agent_id"`
	Label       string  `json:"label"`
	Value       string  `json:"value"`
	Limit       int     `json:"limit"`
	Description *string `json:"description"`
	ReadOnly    bool    `json:"read_only"`
	Version     int64   `json:"version"`
	UpdatedAt   Time    `json:"updated_at"`
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
