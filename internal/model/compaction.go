package model

import (
	"strconv"
	"unicode/utf8"
)

// PrefixCompaction starts a compaction's id.
const PrefixCompaction = "cmp_"

// Compaction says "this summary stands for messages 1..ThroughSeq": what a
// runtime that compacts its history keeps in place of the originals, which
// stay readable, searchable and exported.
type Compaction struct {
	ID           string       `json:"id"`
	SessionID    string       `json:"session_id"`
	ThroughSeq   int64        `json:"through_seq"`
	Summary      Content      `json:"summary"`
	Tokens       int64        `json:"tokens"`
	Model        *string      `json:"model"`
	ProviderItem ProviderItem `json:"provider_item"`
	CreatedAt    Time         `json:"created_at"`
}

// CreateCompaction is the input of POST /v1/sessions/{id}/compactions.
type CreateCompaction struct {
	ThroughSeq   int64        `json:"through_seq"`
	Summary      Content      `json:"summary"`
	Tokens       int64        `json:"tokens"`
	Model        *string      `json:"model,omitempty"`
	ProviderItem ProviderItem `json:"provider_item,omitempty"`
	// ExpectedLastSeq fences the write as an append's does (409 stale_seq).
	ExpectedLastSeq *int64 `json:"expected_last_seq,omitempty"`
	// Messages, when given, are appended after the compaction in the same
	// write: a runtime that replaces its history with a compaction item and
	// the items it keeps (the Agents SDK's replaceHistoryWithCompaction)
	// does it in one request, and a crash leaves the history whole either
	// way. They must follow through_seq at once: through_seq is then the
	// session's last_seq.
	Messages []NewMessage `json:"messages,omitempty"`
	// BoundUser is AppendRequest.BoundUser for Messages.
	BoundUser string `json:"-"`
}

func (*CreateCompaction) checksItsTags() {}

// Validate checks what the store does not: the summary is text (a string or
// text, reasoning and refusal parts), the counts are in range.
func (c *CreateCompaction) Validate() error {
	var out []FieldError
	bad := func(field, msg string) { out = append(out, FieldError{Field: field, Message: msg}) }
	if c.ThroughSeq < 1 {
		bad("through_seq", "must be at least 1")
	}
	switch {
	case c.Summary.Parts != nil:
		out = partErrors("summary", RoleAssistant, c.Summary.Parts, out)
		for i, p := range c.Summary.Parts {
			if p.Type == PartImage || p.Type == PartFile {
				bad("summary["+strconv.Itoa(i)+"].type", "a summary holds text, reasoning and refusal parts")
			}
		}
	case c.Summary.Text == "":
		bad("summary", "is required")
	case utf8.RuneCountInString(c.Summary.Text) > 1048576:
		bad("summary", "must be at most 1048576 characters long")
	}
	switch {
	case c.Tokens < 0:
		bad("tokens", "must be greater than or equal to 0")
	case c.Tokens > MaxMessageTokens:
		bad("tokens", "must be at most 1000000000")
	}
	if c.Model != nil && utf8.RuneCountInString(*c.Model) > 256 {
		bad("model", "must be at most 256 characters long")
	}
	if c.ExpectedLastSeq != nil && *c.ExpectedLastSeq < 0 {
		bad("expected_last_seq", "must be greater than or equal to 0")
	}
	if len(c.Messages) > MaxBatch {
		bad("messages", "must have at most 1000 items")
	} else {
		for i := range c.Messages {
			out = c.Messages[i].fieldErrors("messages["+strconv.Itoa(i)+"].", out)
		}
	}
	raw := len(c.Summary.Text) + len(c.ProviderItem)
	for i := range c.Summary.Parts {
		raw += c.Summary.Parts[i].size() + 64
	}
	if mightNotFit(raw) && out == nil {
		if n := c.jsonSize(); n > MaxRecordJSON {
			field := "summary"
			if len(c.ProviderItem) > raw/2 {
				field = "provider_item"
			}
			out = append(out, FieldError{Field: field, Message: "the compaction would take " + strconv.Itoa(n) +
				" bytes as JSON, over the limit of " + strconv.Itoa(MaxRecordJSON) + " (an export line must hold it)"})
		}
	}
	if out != nil {
		return Invalid(out...)
	}
	if len(c.Messages) > 0 {
		b := AppendBatch{Messages: c.Messages}
		return b.checkKeys()
	}
	return nil
}

// CompactionResult is what POST /v1/sessions/{id}/compactions answers when it
// also appended messages.
type CompactionResult struct {
	Compaction
	Messages []Message `json:"messages,omitempty"`
}

// ContextQuery is what GET /v1/sessions/{id}/context asks for.
type ContextQuery struct {
	MaxTokens     *int64 // nil: everything after the latest compaction
	IncludeBlocks bool
}

// Context is what the next LLM call needs, read from one snapshot.
type Context struct {
	SessionID string `json:"session_id"`
	LastSeq   int64  `json:"last_seq"`
	// Compaction is the latest one, whose summary stands for the messages up to
	// its through_seq; nil when the session has none.
	Compaction *Compaction `json:"compaction"`
	// Messages are in seq order. With max_tokens, system and developer messages
	// from before the window come first, then the newest messages that fit.
	Messages []Message `json:"messages"`
	// Blocks are the agent's core memory blocks, with include=blocks; nil
	// otherwise.
	Blocks []Block `json:"blocks"`
	// Tokens is what the answer counts: the summary's and the messages' tokens.
	Tokens    int64          `json:"tokens"`
	MaxTokens *int64         `json:"max_tokens"`
	Omitted   ContextOmitted `json:"omitted"`
	// OverBudget is set when the summary and the system messages alone pass
	// max_tokens: they are returned anyway, with no other message.
	OverBudget bool `json:"over_budget"`
}

// ContextOmitted is what a context read left out for max_tokens: messages after
// the compaction that did not fit (those before it are its summary's).
type ContextOmitted struct {
	Messages int64  `json:"messages"`
	Tokens   int64  `json:"tokens"`
	FirstSeq *int64 `json:"first_seq"`
	LastSeq  *int64 `json:"last_seq"`
}

// CheckStoredCompaction checks a compaction as an import reads it: the rules
// of its creation, and an id and a time.
func CheckStoredCompaction(c Compaction) error {
	in := CreateCompaction{ThroughSeq: c.ThroughSeq, Summary: c.Summary, Tokens: c.Tokens, Model: c.Model, ProviderItem: c.ProviderItem}
	if err := in.Validate(); err != nil {
		return err
	}
	switch {
	case !ValidClientID(c.ID):
		return Invalid(FieldError{Field: "id", Message: "must be 1 to 128 characters of A-Z a-z 0-9 _ . : -"})
	case c.CreatedAt == 0:
		return Invalid(FieldError{Field: "created_at", Message: "is required"})
	}
	return nil
}
