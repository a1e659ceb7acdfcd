package repo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"sync"

	"github.com/logbook/logbook/internal/model"
)

// Events is the live feed's log: every write that changes a session records
// its events in the same transaction (or, for a message on SQLite, is its own
// event), and readers follow them by position.
type Events interface {
	// ListEvents reads the tenant's events after q.After, in position order,
	// within q's bounds. tenant "" reads every tenant's (the process's own
	// fan-out, never a client). A message.appended event whose message a
	// rewind removed since is left out: the feed shows what is stored.
	ListEvents(ctx context.Context, tenant string, q model.EventQuery) (model.EventBatch, error)
	// EventPosOfSeq returns the position after which the session's events
	// following its message seq begin: that message's own event, or, for seq
	// 0 and for a message the session did not append itself (inherited from
	// its parent, copied, imported), just before the session's creation, its
	// first event. No event of an earlier session of the same id (purged
	// since) lies after that. Errors: KindNotFound (the session).
	EventPosOfSeq(ctx context.Context, tenant, sessionID string, seq int64) (int64, error)
	// EventHead returns the highest position handed out and committed: no
	// event readable now, or ever after, lies at or below it unless already
	// readable.
	EventHead(ctx context.Context) (int64, error)
	// EventsChanged returns a channel that is closed once events after the
	// ones readable when it was returned may be readable.
	EventsChanged() <-chan struct{}
	// FeedSecret is the database's own random secret the feed's ids are
	// sealed with (internal/feed): made once, kept in the database, so that
	// ids stay valid across restarts, processes and restores of a backup.
	FeedSecret() []byte
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

// MessageEventData is a message.appended event's data: the message as stored.
func MessageEventData(m *model.Message) []byte {
	return model.AppendMessageJSON(nil, m)
}

// FeedSecretBytes is the size of the feed's secret.
const FeedSecretBytes = 32

// NewFeedSecret draws a feed secret (FeedSecret).
func NewFeedSecret() ([]byte, error) {
	b := make([]byte, FeedSecretBytes)
	_, err := rand.Read(b)
	return b, err
}
