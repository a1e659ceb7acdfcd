package repo

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// FaultPoint names a place in the store where a test can inject a fault.
type FaultPoint string

const (
	PointBegin           FaultPoint = "begin"            // before a group's BEGIN
	PointExec            FaultPoint = "exec"             // before each write of a group runs
	PointCommit          FaultPoint = "commit"           // at a group's COMMIT
	PointSessionWrite    FaultPoint = "session_write"    // inside a session create/update/close
	PointMessageWrite    FaultPoint = "message_write"    // inside an append
	PointAppendFlush     FaultPoint = "append_flush"     // when a group's staged appends are written
	PointMessageRead     FaultPoint = "message_read"     // before a message read
	PointBlockRead       FaultPoint = "block_read"       // before a core memory block read
	PointBlockWrite      FaultPoint = "block_write"      // inside a block write
	PointArchivalRead    FaultPoint = "archival_read"    // before a passage read or search
	PointArchivalWrite   FaultPoint = "archival_write"   // inside a passage write
	PointCheckpointWrite FaultPoint = "checkpoint_write" // inside a checkpoint write
	PointFileWrite       FaultPoint = "file_write"       // inside a file upload's write
	PointRewind          FaultPoint = "rewind"           // inside a rewind (or a clear)
	PointCompaction      FaultPoint = "compaction"       // inside a compaction's write
	PointRepair          FaultPoint = "repair"           // inside a repair's write
	PointItemRead        FaultPoint = "item_read"        // before an item read, search or listing
	PointItemWrite       FaultPoint = "item_write"       // inside each write of an item write
	// The embedding endpoint times out (the worker retries; a query answers 503).
	PointEmbeddingTimeout FaultPoint = "embedding_timeout"
	PointVectorSearch     FaultPoint = "vector_search" // before a search by meaning reads its vectors
)

// FaultKind is what happens at a point.
type FaultKind string

const (
	FaultError   FaultKind = "error"   // the operation fails as an I/O error would
	FaultLatency FaultKind = "latency" // the operation is delayed, then goes on
	// At PointCommit and PointCheckpointWrite only: the process "dies" before
	// the group's commit (nothing is stored) or right after it (everything is
	// stored, but no waiter hears so), which is what a client sees when the server
	// is killed.
	FaultCrashBeforeCommit FaultKind = "crash_before_commit"
	FaultCrashAfterCommit  FaultKind = "crash_after_commit"
)

// FaultRule fires Kind at Point with probability Rate (0–1).
type FaultRule struct {
	Point   FaultPoint
	Kind    FaultKind
	Rate    float64
	Latency time.Duration // for FaultLatency
	Times   int           // fire at most this many times; 0: no limit
}

// FaultEvent is one fault that fired.
type FaultEvent struct {
	Seq   int
	Point FaultPoint
	Kind  FaultKind
}

func (e FaultEvent) String() string { return fmt.Sprintf("#%d %s@%s", e.Seq, e.Kind, e.Point) }

// ErrInjected is the cause of every injected failure.
var ErrInjected = errors.New("injected fault")

// Faults decides, from a seeded PRNG, which faults fire where. The same seed and
// the same sequence of points give the same faults. A nil *Faults injects nothing:
// production stores have none, and the check costs a nil comparison.
type Faults struct {
	mu     sync.Mutex
	rng    *rand.Rand
	rules  map[FaultPoint][]FaultRule
	events []FaultEvent
	hits   int
	off    bool // inside Without
}

// Without runs fn with no fault firing and no draw from the PRNG: work a
// test does beside its sequence of points (a background worker stepped by
// hand) leaves that sequence, and so the faults, as the seed makes them.
func (f *Faults) Without(fn func()) {
	if f == nil {
		fn()
		return
	}
	f.mu.Lock()
	f.off = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.off = false
		f.mu.Unlock()
	}()
	fn()
}

// NewFaults makes an injector. Crash kinds are only valid at PointCommit and
// PointCheckpointWrite.
func NewFaults(seed uint64, rules ...FaultRule) (*Faults, error) {
	f := &Faults{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), rules: map[FaultPoint][]FaultRule{}}
	for _, r := range rules {
		crash := r.Kind == FaultCrashBeforeCommit || r.Kind == FaultCrashAfterCommit
		if crash && r.Point != PointCommit && r.Point != PointCheckpointWrite {
			return nil, fmt.Errorf("repo: %s can only fire at %s or %s, not %s", r.Kind, PointCommit, PointCheckpointWrite, r.Point)
		}
		if r.Rate < 0 || r.Rate > 1 {
			return nil, fmt.Errorf("repo: fault rate %v is not in [0, 1]", r.Rate)
		}
		f.rules[r.Point] = append(f.rules[r.Point], r)
	}
	return f, nil
}

// Events returns every fault fired so far, in order.
func (f *Faults) Events() []FaultEvent {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FaultEvent(nil), f.events...)
}

// Fire consults the rules of point p. It sleeps for a latency fault and returns the
// kind of a failing one ("" for none).
func (f *Faults) Fire(p FaultPoint) FaultKind {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	if f.off {
		f.mu.Unlock()
		return ""
	}
	var (
		kind  FaultKind
		sleep time.Duration
	)
	for i := range f.rules[p] {
		r := &f.rules[p][i]
		// One draw per rule, always, so that the PRNG's sequence depends only on the
		// sequence of points reached, never on which rules fired.
		if f.rng.Float64() >= r.Rate || kind != "" || r.Times < 0 {
			continue
		}
		if r.Times > 0 {
			if r.Times--; r.Times == 0 {
				r.Times = -1 // spent
			}
		}
		f.hits++
		f.events = append(f.events, FaultEvent{Seq: f.hits, Point: p, Kind: r.Kind})
		if r.Kind == FaultLatency {
			sleep += r.Latency
			continue
		}
		kind = r.Kind
	}
	f.mu.Unlock()
	if sleep > 0 {
		time.Sleep(sleep)
	}
	return kind
}

// Check fires point p and turns a failing fault into the storage error a real
// failure at that point would give.
func (f *Faults) Check(p FaultPoint) error {
	if k := f.Fire(p); k != "" {
		return model.Unavailable(fmt.Errorf("%w: %s at %s", ErrInjected, k, p))
	}
	return nil
}
