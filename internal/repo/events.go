package repo

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/logbook/logbook/internal/model"
)

// Events is the live feed's log: every write that changes a session records
// its events in the same transaction, and readers follow them by position.
type Events interface {
	// ListEvents returns the tenant's events after q.After, in position order,
	// at most q.Limit. tenant "" reads every tenant's (the process's own
	// fan-out, never a client).
	ListEvents(ctx context.Context, tenant string, q model.EventQuery) ([]model.Event, error)
	// EventPosOfSeq returns the position of the event that appended the
	// session's message seq as it stands now. Errors: KindNotFound (the
	// session, or an event for that message).
	EventPosOfSeq(ctx context.Context, tenant, sessionID string, seq int64) (int64, error)
	// EventHead returns the position of the latest event readable now.
	EventHead(ctx context.Context) (int64, error)
	// EventsChanged returns a channel that is closed once events after the
	// ones readable when it was returned may be readable.
	EventsChanged() <-chan struct{}
}

// EventSignal is a broadcast without a payload: Changed hands out a channel
// that Signal closes (and replaces). A reader that looks at the log after
// taking the channel never misses a change: one after its look closes it.
type EventSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Changed returns the channel the next Signal closes.
func (e *EventSignal) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ch == nil {
		e.ch = make(chan struct{})
	}
	return e.ch
}

// Signal wakes every holder of a channel from Changed.
func (e *EventSignal) Signal() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ch != nil {
		close(e.ch)
		e.ch = nil
	}
}

// SessionEventData is a session event's data: the session as the API shows it.
func SessionEventData(s model.Session) []byte {
	b, _ := json.Marshal(s)
	return b
}

// RewindEventData is a session.rewound event's data.
func RewindEventData(sessionID string, toSeq int64, res model.RewindResult) []byte {
	b, _ := json.Marshal(model.RewindEvent{SessionID: sessionID, ToSeq: toSeq, RemovedMessages: res.RemovedMessages,
		RemovedCheckpoints: res.RemovedCheckpoints, RemovedCompactions: res.RemovedCompactions})
	return b
}

// CompactionEventData is a compaction.created event's data.
func CompactionEventData(c model.Compaction) []byte {
	b, _ := json.Marshal(c)
	return b
}

// CheckpointEventData is a checkpoint.created event's data.
func CheckpointEventData(c model.Checkpoint) []byte {
	b, _ := json.Marshal(model.CheckpointEvent{ID: c.ID, SessionID: c.SessionID, Iteration: c.Iteration,
		LastSeq: c.LastSeq, SHA256: c.SHA256, CreatedAt: c.CreatedAt})
	return b
}

// MessageEventData is a message.appended event's data: the message as stored,
// or, when it is gone, what says so in its place.
func MessageEventData(m *model.Message, id, sessionID string, seq int64) []byte {
	if m == nil {
		b, _ := json.Marshal(model.RemovedMessageEvent{ID: id, SessionID: sessionID, Seq: seq, Removed: true})
		return b
	}
	return model.AppendMessageJSON(nil, m)
}
