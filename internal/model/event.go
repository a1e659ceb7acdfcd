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
// twice. Pos is the Server-Sent Events id.
type Event struct {
	Pos       int64
	Tenant    string
	Type      EventType
	SessionID string
	// Data is the object the event is about, as the API shows it: the message,
	// the session, the rewind, the compaction, the checkpoint (without its
	// state).
	Data json.RawMessage
	// MessageID and Seq name a message.appended event's message, which its
	// Data shows as it stands when read: removed, once a rewind took it.
	MessageID string
	Seq       int64
}

// EventQuery selects a tenant's events after a position.
type EventQuery struct {
	SessionID string      // "" for every session of the tenant
	Types     []EventType // empty for every type
	After     int64       // events with Pos > After
	Limit     int
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

// RemovedMessageEvent is the data of a message.appended event whose message
// is no longer stored (a rewind took it since): a reader that resumes from
// before the removal still sees the event, in its place.
type RemovedMessageEvent struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
	Removed   bool   `json:"removed"`
}
