// Package feed fans the store's event log out to the live feed's readers: one
// goroutine per process follows the log and keeps its newest events in
// memory, however many readers there are, and a reader that falls behind
// what memory holds reads the store instead. Readers only ever pull, so a
// slow one costs the writer nothing.
package feed

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// DefaultBatchBytes bounds a reader's batch when its query names no bound:
// a reader holds one batch at a time, so this (or one event, when a single
// event is larger) is what a reader that stops reading makes the server hold.
const DefaultBatchBytes = 256 << 10

// tailBatchBytes bounds one read of the tail (the ring's own bound is
// Options.MaxBytes).
const tailBatchBytes = 4 << 20

// Options bound the hub's memory and say how often it looks without being
// told (another process's writes wake no one here on SQLite).
type Options struct {
	MaxEvents int           // events kept in memory; 0: 8192
	MaxBytes  int           // their data's bytes; 0: 32 MiB
	Poll      time.Duration // how often to look when nothing says to; 0: 1s
	Log       zerolog.Logger
}

// Hub follows the log while it has readers.
type Hub struct {
	store repo.Events
	opts  Options

	mu      sync.Mutex
	readers int
	stop    context.CancelFunc
	stopped chan struct{}
	// ring holds every event with start < pos <= head, in order: a reader
	// whose position is at least start reads it here.
	ring        []model.Event
	bytes       int
	start, head int64
	tailing     bool          // ring and head describe the log (false until the first read)
	changed     chan struct{} // closed when head moves or the hub stops

	read      int64        // events the tail has read from the store (stats.go)
	delivered atomic.Int64 // events handed to readers
}

// New returns a hub over store; it starts following the log with its first
// reader and stops after its last.
func New(store repo.Events, opts Options) *Hub {
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 8192
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 32 << 20
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	return &Hub{store: store, opts: opts, changed: make(chan struct{})}
}

// join counts a reader in, starting the tail with the first.
func (h *Hub) join() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readers++
	if h.readers > 1 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	prev := h.stopped // a tail stopped by the last reader may not have ended yet
	h.stop, h.stopped = cancel, make(chan struct{})
	go func(done chan struct{}) {
		if prev != nil {
			<-prev // one tail at a time: the ring and head are the tail's
		}
		h.tail(ctx, done)
	}(h.stopped)
}

// leave counts a reader out; the last one stops the tail and waits for it.
func (h *Hub) leave() {
	h.mu.Lock()
	h.readers--
	if h.readers > 0 {
		h.mu.Unlock()
		return
	}
	stop, stopped := h.stop, h.stopped
	h.mu.Unlock()
	stop()
	<-stopped
}

// tail reads what the log gains into the ring until ctx ends. While nothing
// follows the log the ring is dropped: what was written meanwhile is not in
// it, so it would have a hole.
func (h *Hub) tail(ctx context.Context, done chan struct{}) {
	defer close(done)
	defer func() {
		h.mu.Lock()
		h.ring, h.bytes, h.tailing = nil, 0, false
		h.broadcastLocked()
		h.mu.Unlock()
	}()
	for {
		changed := h.store.EventsChanged() // taken before the read: a write after it closes it
		h.mu.Lock()
		tailing, head := h.tailing, h.head
		h.mu.Unlock()
		if !tailing {
			head, err := h.store.EventHead(ctx)
			if err != nil {
				if !h.pause(ctx, changed, err) {
					return
				}
				continue
			}
			h.mu.Lock()
			h.start, h.head, h.tailing = head, head, true
			h.broadcastLocked() // readers waiting for the ring may use it now
			h.mu.Unlock()
		}
		if !tailing {
			continue // now tailing, from the head just read
		}
		b, err := h.store.ListEvents(ctx, "", model.EventQuery{After: head, Limit: 1000, MaxBytes: tailBatchBytes})
		if err != nil {
			if !h.pause(ctx, changed, err) {
				return
			}
			continue
		}
		h.add(b)
		if b.More {
			continue // more waiting
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-time.After(h.opts.Poll):
		}
	}
}

// pause waits after a failed read; false when the hub is stopping.
func (h *Hub) pause(ctx context.Context, changed <-chan struct{}, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	h.opts.Log.Warn().Err(err).Msg("live feed: reading the event log")
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-time.After(h.opts.Poll):
	}
	return true
}

// add appends a read of the log to the ring, trims the ring to its bounds
// and wakes readers.
func (h *Hub) add(b model.EventBatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(b.Events) == 0 && b.Through <= h.head {
		return
	}
	for _, e := range b.Events {
		if e.Type == model.EventSessionRewound {
			h.forgetRewoundLocked(&e)
		}
		h.ring = append(h.ring, e)
		h.bytes += len(e.Data)
	}
	h.head = max(h.head, b.Through)
	h.read += int64(len(b.Events))
	drop := 0
	for len(h.ring)-drop > h.opts.MaxEvents || (h.bytes > h.opts.MaxBytes && len(h.ring)-drop > 1) {
		h.bytes -= len(h.ring[drop].Data)
		h.start = h.ring[drop].Pos
		drop++
	}
	if drop > 0 {
		h.ring = append(h.ring[:0:0], h.ring[drop:]...)
	}
	h.broadcastLocked()
}

// forgetRewoundLocked drops from the ring the message events of the messages
// a rewind removed: the store no longer has them, and a reader gets the same
// events whether memory or the store serves it (a removed message is simply
// absent; the session.rewound event tells). The rewind's own new messages
// come after it, so none of them is in the ring yet.
func (h *Hub) forgetRewoundLocked(rw *model.Event) {
	var r model.RewindEvent
	if json.Unmarshal(rw.Data, &r) != nil {
		return
	}
	kept := h.ring[:0]
	for _, e := range h.ring {
		if e.Type == model.EventMessageAppended && e.Tenant == rw.Tenant && e.SessionID == rw.SessionID && e.Seq > r.ToSeq {
			h.bytes -= len(e.Data)
			continue
		}
		kept = append(kept, e)
	}
	clear(h.ring[len(kept):]) // let the dropped events' data go
	h.ring = kept
}

func (h *Hub) broadcastLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Reader is one reader's view of the feed: Next gives what its query selects,
// in order, each event once.
type Reader struct {
	hub    *Hub
	tenant string
	q      model.EventQuery
	closed bool
}

// Subscribe returns a reader of tenant's events that q selects after
// q.After, in batches within q.Limit and q.MaxBytes (DefaultBatchBytes when
// unset). Close it when done.
func (h *Hub) Subscribe(tenant string, q model.EventQuery) *Reader {
	if q.Limit <= 0 || q.Limit > 1000 {
		q.Limit = 500
	}
	if q.MaxBytes <= 0 {
		q.MaxBytes = DefaultBatchBytes
	}
	h.join()
	return &Reader{hub: h, tenant: tenant, q: q}
}

// Close lets the hub stop following the log when no one else reads it.
func (r *Reader) Close() {
	if !r.closed {
		r.closed = true
		r.hub.leave()
	}
}

// Next returns the next batch of events, waiting at most wait for some (none
// then, and no error: time for a heartbeat, or to look around). It ends early
// when ctx does. The batch is the reader's to hold until its next call; it
// shares the events' data with the hub, which never changes it.
func (r *Reader) Next(ctx context.Context, wait time.Duration) ([]model.Event, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		evs, behind, changed := r.fromRing()
		if len(evs) > 0 {
			r.hub.delivered.Add(int64(len(evs)))
			return evs, nil
		}
		if behind {
			h := r.hub
			h.mu.Lock()
			head, tailing := h.head, h.tailing
			h.mu.Unlock()
			b, err := h.store.ListEvents(ctx, r.tenant, r.q)
			if err != nil {
				return nil, err
			}
			r.q.After = max(r.q.After, b.Through)
			if len(b.Events) > 0 {
				h.delivered.Add(int64(len(b.Events)))
				return b.Events, nil
			}
			if b.More { // a stretch of the log with none of ours: on to the next
				select {
				case <-timer.C:
					return nil, nil // but not past the wait: the caller has things to do
				default:
					continue
				}
			}
			if tailing && head > r.q.After {
				// Nothing of ours up to the store's now, which is past the
				// hub's head then: the ring serves us from there.
				r.q.After = head
			}
			if tailing {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, nil
		case <-changed:
		}
	}
}

// fromRing returns what the ring holds for the reader; behind when the ring
// starts after the reader's position (or the hub is not following the log
// yet), and the channel the next change closes.
func (r *Reader) fromRing() (evs []model.Event, behind bool, changed <-chan struct{}) {
	h := r.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	changed = h.changed
	if !h.tailing || r.q.After < h.start {
		return nil, true, changed
	}
	// The ring is in pos order: find the first event past the reader.
	lo, hi := 0, len(h.ring)
	for lo < hi {
		mid := (lo + hi) / 2
		if h.ring[mid].Pos <= r.q.After {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	size := 0
	for _, e := range h.ring[lo:] {
		if e.Tenant == r.tenant && r.q.Matches(&e) {
			evs = append(evs, e)
			if size += len(e.Data); r.q.Full(len(evs), size) {
				break
			}
		}
	}
	switch {
	case len(evs) > 0:
		r.q.After = evs[len(evs)-1].Pos
	case h.head > r.q.After:
		r.q.After = h.head // nothing of ours in the ring: skip what it holds
	}
	return evs, false, changed
}
