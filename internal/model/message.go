package model

import "strconv"

// Role says who wrote a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
	// RoleDeveloper is OpenAI's instructions from the application, beside the
	// system prompt; context reads keep it first, as system messages.
	RoleDeveloper Role = "developer"
)

// ToolCall is one function call made by an assistant, as OpenAI's APIs send it:
// Arguments is a string that holds JSON.
type ToolCall struct {
	ID        string `json:"id" validate:"required,max=256"`
	Name      string `json:"name" validate:"required,max=256"`
	Arguments string `json:"arguments" validate:"json"`
	// ClientSide marks a call that the client runs (a tool with no server
	// side, the AI SDK's tools without execute): its result may come long
	// after, so resume does not report it unanswered.
	ClientSide bool `json:"client_side,omitempty"`
	// ProviderData keeps what a provider's call carried beyond these (OpenAI's
	// fc_… item id and status, Anthropic's cache_control), so that parallel
	// calls in one message each come back whole.
	ProviderData Object `json:"provider_data,omitempty"`
}

// Message is one entry of a session's history. Seq is the session's one order.
type Message struct {
	ID string `json:"id"`
	// ClientID is the client's own id of the message (the AI SDK's
	// UIMessage id), unique in the session's history.
	ClientID     *string      `json:"client_id"`
	SessionID    string       `json:"session_id"`
	Seq          int64        `json:"seq"`
	Role         Role         `json:"role"`
	Content      Content      `json:"content"`
	Name         *string      `json:"name"`
	ToolCalls    []ToolCall   `json:"tool_calls"`
	ToolCallID   *string      `json:"tool_call_id"`
	IsError      bool         `json:"is_error"`
	AgentID      *string      `json:"agent_id"`
	Model        *string      `json:"model"`
	Tokens       int64        `json:"tokens"`
	Cost         float64      `json:"cost"`
	Metadata     Object       `json:"metadata"`
	ProviderItem ProviderItem `json:"provider_item"`
	CreatedAt    Time         `json:"created_at"`
}

// NewMessage is one message to append. IdempotencyKey names this message: a retry
// carrying the same key returns the stored message instead of writing another.
type NewMessage struct {
	Role Role `json:"role" validate:"required,oneof=user assistant system tool developer"`
	// ClientID: 1–256 characters, no control characters; unique in the
	// session's history (409 client_id_taken).
	ClientID *string `json:"client_id,omitempty"`
	// Content is a string of at most 1048576 characters, or parts (part_check.go).
	Content        Content      `json:"content"`
	Name           *string      `json:"name,omitempty" validate:"omitempty,max=256"`
	ToolCalls      []ToolCall   `json:"tool_calls,omitempty" validate:"omitempty,excluded_unless=Role assistant,max=128,dive"`
	ToolCallID     *string      `json:"tool_call_id,omitempty" validate:"required_if=Role tool,excluded_unless=Role tool,omitempty,min=1,max=256"`
	IsError        bool         `json:"is_error,omitempty" validate:"excluded_unless=Role tool"`
	AgentID        *string      `json:"agent_id,omitempty" validate:"omitempty,min=1,max=128"`
	Model          *string      `json:"model,omitempty" validate:"omitempty,max=256"`
	Tokens         int64        `json:"tokens" validate:"gte=0,lte=1000000000"`
	Cost           float64      `json:"cost" validate:"gte=0,lte=1000000"`
	Metadata       Object       `json:"metadata,omitempty"`
	ProviderItem   ProviderItem `json:"provider_item,omitempty"`
	IdempotencyKey string       `json:"idempotency_key,omitempty" validate:"omitempty,max=255"`
	// Embedding and EmbeddingModel, both or neither, are the client's vector
	// of the message: stored in the append's own write, ready for search by
	// meaning at once, under the session's agent, whose model and dimensions
	// they must match (or pin, for the agent's first embedding). Finite
	// numbers only (CheckVector); both-or-neither is Validate's.
	Embedding      []float32 `json:"embedding,omitempty" validate:"omitempty,max=8192"`
	EmbeddingModel string    `json:"embedding_model,omitempty" validate:"omitempty,max=256"`
}

// Bounds on what one message may count and on a session's running totals. They
// are far above anything real (a context window holds a few million tokens), and
// they keep every sum exact and finite: an int64 that overflowed, or a cost that
// became +Inf, would make every later read of the session fail.
const (
	MaxMessageTokens = 1_000_000_000 // per message; the validate tag on NewMessage.Tokens says the same
	MaxMessageCost   = 1_000_000     // per message; the validate tag on NewMessage.Cost says the same
	MaxTotalTokens   = 1_000_000_000_000_000
	MaxTotalCost     = 1_000_000_000_000
)

// LimitExceeded is a write that would take a running total past its bound.
func LimitExceeded(field, msg string) *Error {
	return &Error{Kind: KindInvalid, Code: "limit_exceeded", Msg: field + ": " + msg,
		Fields: []FieldError{{Field: field, Message: msg}}}
}

// MaxBatch is the most messages one append request may carry.
const MaxBatch = 1000

// AppendBatch is the input of a batch append: all of it is stored, or none.
type AppendBatch struct {
	Messages []NewMessage `json:"messages" validate:"required,min=1,max=1000,dive"`
}

// checkKeys catches what tags cannot: two messages of one batch sharing a key,
// or a client id.
func (b *AppendBatch) checkKeys() error {
	seen := make(map[string]int, len(b.Messages))
	var fields []FieldError
	var ids map[string]int // made only for a batch that carries client ids
	for i, m := range b.Messages {
		if m.ClientID != nil {
			if ids == nil {
				ids = map[string]int{}
			}
			if j, dup := ids[*m.ClientID]; dup {
				fields = append(fields, FieldError{
					Field:   "messages[" + strconv.Itoa(i) + "].client_id",
					Message: "repeats the client_id of messages[" + strconv.Itoa(j) + "]",
				})
			} else {
				ids[*m.ClientID] = i
			}
		}
		if m.IdempotencyKey == "" {
			continue
		}
		if j, dup := seen[m.IdempotencyKey]; dup {
			fields = append(fields, FieldError{
				Field:   "messages[" + strconv.Itoa(i) + "].idempotency_key",
				Message: "repeats the key of messages[" + strconv.Itoa(j) + "]",
			})
			continue
		}
		seen[m.IdempotencyKey] = i
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}

// AppendRequest is one append call as the store receives it. RequestKey is the
// Idempotency-Key header: it names the whole request, a single message or a batch
// (Batch), so that a retry is answered in the shape it was asked in.
type AppendRequest struct {
	Messages   []NewMessage
	RequestKey string
	Batch      bool
	// ExpectedLastSeq, when set, must be the session's last_seq for anything
	// new to be written (stale_seq otherwise): the fence that gives a runtime
	// without idempotency keys exactly-once appends, and lets two workers on one
	// session notice each other. A replay is answered whatever it says.
	ExpectedLastSeq *int64
	// BoundUser is the end user the appending key is bound to, if any: its
	// parts may then name only the files that user may read (repo.Files).
	BoundUser string
}

// AppendResult is what an append stored, or what an earlier identical call stored.
type AppendResult struct {
	Messages []Message
	Replayed bool // nothing was written: every message came from an earlier call
}

// MessageFilter selects a session's messages for a list.
type MessageFilter struct {
	Desc      bool
	AfterSeq  int64 // 0: no lower bound
	BeforeSeq int64 // 0: no upper bound
	Role      Role
}
