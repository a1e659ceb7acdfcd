package model

import "strings"

// Status is where a session is in its life.
type Status string

const (
	StatusCreated   Status = "created"
	StatusActive    Status = "active"
	StatusCompleted Status = "completed"
	StatusArchived  Status = "archived"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusCreated, StatusActive, StatusCompleted, StatusArchived}

var transitions = map[Status][]Status{
	StatusCreated:   {StatusActive, StatusCompleted, StatusArchived},
	StatusActive:    {StatusCompleted, StatusArchived},
	StatusCompleted: {StatusArchived, StatusActive}, // completed → active reopens
	StatusArchived:  nil,                            // terminal
}

// Valid reports whether s is one of the four statuses.
func (s Status) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// Closed reports whether messages can no longer be appended.
func (s Status) Closed() bool { return s == StatusCompleted || s == StatusArchived }

// CanTransition reports whether a session may move from one status to another.
// Staying in the same status is always allowed (a no-op).
func CanTransition(from, to Status) bool {
	if from == to {
		return from.Valid()
	}
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// InvalidTransition is the error for a refused status change; it names both ends so
// that a client can tell what the session's status was.
func InvalidTransition(from, to Status) *Error {
	return &Error{Kind: KindConflict, Code: "invalid_transition",
		Msg:   "cannot move a session from " + string(from) + " to " + string(to),
		Extra: map[string]any{"from": from, "to": to}}
}

// Session is one agent conversation with its running counters.
type Session struct {
	ID           string  `json:"id"`
	AgentID      *string `json:"agent_id"`
	UserID       *string `json:"user_id"` // the end user the session belongs to, if the client said
	Title        *string `json:"title"`
	Status       Status  `json:"status"`
	Metadata     Object  `json:"metadata"`
	MessageCount int64   `json:"message_count"`
	LastSeq      int64   `json:"last_seq"`
	TotalTokens  int64   `json:"total_tokens"`
	TotalCost    float64 `json:"total_cost"`
	// TurnCount counts the user messages in the session's history.
	TurnCount   int64   `json:"turn_count"`
	ParentID    *string `json:"parent_id"`
	ForkedAtSeq *int64  `json:"forked_at_seq"`
	CreatedAt   Time    `json:"created_at"`
	UpdatedAt   Time    `json:"updated_at"`
	ClosedAt    *Time   `json:"closed_at"`
	// ExpiresAt is when the session's time to live ends: from then on reads
	// do not find it, and a purge with Expired erases it.
	ExpiresAt *Time `json:"expires_at"`
	// Incarnation tells apart the sessions a tenant has had under one id: it
	// is set once, when the session is made, and never given again, so a
	// purged session that another of the same id replaced has another. A live
	// feed belongs to the incarnation it opened on. Never shown.
	Incarnation int64 `json:"-"`
}

// Expired reports whether the session's time to live ended at or before now.
func (s Session) Expired(now Time) bool { return s.ExpiresAt != nil && *s.ExpiresAt <= now }

// CreateSession is the input of POST /v1/sessions.
type CreateSession struct {
	ID       string  `json:"id,omitempty" validate:"omitempty,max=128,clientid"`
	AgentID  *string `json:"agent_id,omitempty" validate:"omitempty,min=1,max=128"`
	UserID   *string `json:"user_id,omitempty" validate:"omitempty,min=1,max=128"`
	Title    *string `json:"title,omitempty" validate:"omitempty,max=1000"`
	Metadata Object  `json:"metadata,omitempty"`
	// ExpiresAt, if set, is when the session expires (RFC 3339).
	ExpiresAt *Time `json:"expires_at,omitempty"`
	// UserSpace, set for a key bound to UserID, takes ID in that user's own id
	// space: held by another principal, it is stored as UserSessionID.
	UserSpace bool `json:"-"`
}

// UpdateSession is the input of PATCH /v1/sessions/{id}. Metadata is an RFC 7396
// merge patch over the stored metadata.
type UpdateSession struct {
	Status   Optional[Status] `json:"status"`
	Title    Optional[string] `json:"title"`
	Metadata Optional[Object] `json:"metadata"`
	// ExpiresAt sets (or, null, clears) the session's time to live.
	ExpiresAt Optional[Time] `json:"expires_at"`
}

// Validate checks the fields that tags cannot reach inside Optional.
func (u UpdateSession) Validate() error {
	var fields []FieldError
	if u.Status.Set && (u.Status.Null || !u.Status.Value.Valid()) {
		fields = append(fields, FieldError{Field: "status", Message: "must be one of: created, active, completed, archived"})
	}
	if u.Title.Set && !u.Title.Null && len(u.Title.Value) > 1000 {
		fields = append(fields, FieldError{Field: "title", Message: "must be at most 1000 characters long"})
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}

// SessionFilter selects sessions for a list; every set field must match.
type SessionFilter struct {
	Status        Status
	AgentID       string
	UserID        string
	Metadata      []MetadataMatch // all must match
	CreatedAfter  *Time
	CreatedBefore *Time
	// DueBefore selects paused sessions whose latest checkpoint's pause_until_ms
	// is at or before it: a scheduler's wake-up query.
	DueBefore *Time
	// Title selects the sessions whose title contains it (TitleContains).
	// omitempty, as Oldest: a filter without them makes the cursors it made
	// before they existed.
	Title string `json:",omitempty"`
	// Oldest lists oldest first instead of newest first.
	Oldest bool `json:",omitempty"`
}

// MaxTitleFilter bounds the title a list may search for: a title is at most
// 1000 characters, so a longer text matches nothing anyway.
const MaxTitleFilter = 1000

// FoldTitle is a title, or the text searched for in titles, as the title
// filter compares them: ASCII letters in lower case, every other character
// as it is. Both backends fold the same way (SQLite's LIKE, PostgreSQL's
// translate() of A–Z), whatever the database's locale.
func FoldTitle(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// TitleContains is the title filter's rule, which both backends' SQL
// implements: the folded title contains the folded text.
func TitleContains(title, text string) bool {
	return strings.Contains(FoldTitle(title), FoldTitle(text))
}

// SessionCountMax is where counting a list's sessions stops: a count up to
// it is exact, and past it the answer says "more than" instead of reading
// every row of a large tenant for a number nobody needs to the unit.
const SessionCountMax = 10000

// SessionCount is how many sessions a list's filters select, all pages
// together (GET /v1/sessions?count=true).
type SessionCount struct {
	// Count is the number of sessions, or SessionCountMax when Exact is false.
	Count int64 `json:"count"`
	// Exact is false when there are more than Count.
	Exact bool `json:"exact"`
}

// SessionPage is a page of sessions, with their count when it was asked for.
type SessionPage struct {
	Page[Session]
	Total *SessionCount `json:"total"`
}

// MetadataMatch matches a top-level metadata key whose value, rendered as text
// (strings as they are, other values as JSON writes them), equals Value.
type MetadataMatch struct {
	Key   string
	Value string
}
