package model

import (
	"encoding/json"
	"slices"
)

// EventType names what an event of the live feed says happened.
type EventType string

// The live feed's event types: the changes a dashboard or a second runtime
// follows a session by.
const (
	EventMessageAppended   EventType = "message.appended"
	EventSessionCreated    EventType = "session.created"
	EventSessionUpdated    EventType = "session.updated"
	EventSessionRewound    EventType = "session.rewound"
	EventCompactionCreated EventType = "compaction.created"
	EventCheckpointCreated EventType = "checkpoint.created"
)

// EventTypes lists every event type, in the order the API documents them.
var EventTypes = []EventType{EventMessageAppended, EventSessionCreated, EventSessionUpdated,
	EventSessionRewound, EventCompactionCreated, EventCheckpointCreated}

// Valid reports whether t is one of EventTypes.
func (t EventType) Valid() bool { return slices.Contains(EventTypes, t) }

// Event is one committed change. Pos orders a database's events as they
// committed: every event of a session comes after the ones committed before
// it, and a reader that resumes after a pos misses nothing and sees nothing
// twice. Clients never see a Pos: the Server-Sent Events id is Pos sealed
// for the reader's tenant (internal/feed's IDs), so that the gaps between
// ids say nothing about other tenants' writes.
type Event struct {
	Pos       int64
	Tenant    string
	Type      EventType
	SessionID string
	// Data is the object the event is about, as the API shows it: the message,
	// the session, the rewind, the compaction, the checkpoint (without its
	// state).
	Data json.RawMessage
	// Seq is a message.appended event's message seq: a later rewind below it
	// removes the message, and with it the event (a removed message is simply
	// absent from the feed; the session.rewound event tells).
	Seq int64
}

// EventQuery selects a tenant's events after a position.
type EventQuery struct {
	SessionID string      // "" for every session of the tenant
	Types     []EventType // empty for every type
	After     int64       // events with Pos > After
	Limit     int
	// MaxBytes bounds a batch: a read stops once its events' Data passes it,
	// though it always returns at least one event. 0: no bound but Limit.
	MaxBytes int
}

// Full reports whether a batch of n events holding size bytes of data has
// reached q's bounds.
func (q EventQuery) Full(n, size int) bool {
	return (q.Limit > 0 && n >= q.Limit) || (q.MaxBytes > 0 && size >= q.MaxBytes)
}

// EventBatch is one read of the log. Through is how far the read looked:
// every event q selects with After < Pos <= Through is in Events, so a reader
// goes on after Through whatever Events holds (a read may look past events it
// leaves out, or past stretches holding none of its events). More says that
// the read stopped at a bound (Limit, MaxBytes, or a stretch of the log it
// reads at most), so more may be readable after Through already; without it
// the read saw everything committed when it ran.
type EventBatch struct {
	Events  []Event
	Through int64
	More    bool
}

// Matches reports whether e passes q's session and type filters.
func (q EventQuery) Matches(e *Event) bool {
	if q.SessionID != "" && e.SessionID != q.SessionID {
		return false
	}
	return len(q.Types) == 0 || slices.Contains(q.Types, e.Type)
}

// RewindEvent is the data of a session.rewound event: what the rewind
// removed. The messages it appended after the cut follow as their own
// message.appended events.
type RewindEvent struct {
	SessionID          string  `json:"session_id"`
	ToSeq              int64   `json:"to_seq"`
	RemovedMessages    int64   `json:"removed_messages"`
	RemovedCheckpoints []int64 `json:"removed_checkpoints"`
	RemovedCompactions int64   `json:"removed_compactions"`
}

// CheckpointEvent is the data of a checkpoint.created event: the checkpoint
// without its state, which can be large and is one GET away.
type CheckpointEvent struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Iteration int64  `json:"iteration"`
	LastSeq   int64  `json:"last_seq"`
	SHA256    string `json:"sha256"`
	CreatedAt Time   `json:"created_at"`
}

// InvalidEventID is a resume position (the Last-Event-ID header, or ?after=)
// that is no id of the caller's feed: malformed, another tenant's, forged,
// or past the newest event.
func InvalidEventID(field, message string) *Error {
	return &Error{Kind: KindBadRequest, Code: "invalid_event_id", Msg: field + ": " + message,
		Fields: []FieldError{{Field: field, Message: message}}}
}
