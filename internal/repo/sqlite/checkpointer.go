package sqlite

import (
	"context"
	"os"
	"strings"
	"time"
)

// WAL checkpoints run beside the writer, not in it. SQLite's automatic
// checkpoint runs inside the commit that crosses 1000 WAL pages, on the
// committing connection: here, the one writer. It copies those pages into the
// database file and fsyncs it, tens to hundreds of milliseconds under a tenant
// writing megabyte messages, and every other tenant's write queued behind that
// commit waited for it. So the writer's connection has wal_autocheckpoint off,
// and a goroutine runs PASSIVE checkpoints on a connection of its own: they
// copy what no reader still needs while the writer goes on appending to the WAL.
//
// PASSIVE alone does not bound the WAL. SQLite starts the log over from its
// first frame only when a write begins after a checkpoint copied every frame
// and no reader still reads one; under sustained appends the writer commits
// again while each PASSIVE runs, that moment never comes, and the file grows
// by every commit (measured: ~1 GB per 10 s of load, all of it left on disk).
// So past a size the writer hands over, as litestream bounds its WAL: between
// two groups, holding no lock, it has the checkpoint connection run a RESTART
// checkpoint, which copies what PASSIVE left, waits (restartWait at most) for
// the readers of old frames to finish, and leaves the log to be started over
// by the writer's next commit; journal_size_limit then cuts the file back to
// the bound. Appends queued meanwhile wait for the hand-over, which is why it
// happens only past the bound and why the wait for readers is short.
const checkpointEvery = 250 * time.Millisecond

// DefaultWALMaxBytes is the WAL's bound when Config.WALMaxBytes is 0: small
// beside any disk, and several seconds of appends at ordinary rates, though
// under one at the heaviest measured (~100 MB of WAL a second), where an
// operator should raise it (docs/operations.md, "The WAL").
const DefaultWALMaxBytes = 64 << 20

// restartWait bounds how long a RESTART waits for readers (it is the
// checkpoint connection's busy_timeout): the writer waits that long at most
// on top of the copying. A reader that holds its transaction longer (an
// export to a slow client, a backup's VACUUM INTO) keeps the WAL from
// restarting; the writer then goes on and tries again later, backing off up
// to restartBackoffMax, while the file grows past the bound.
const (
	restartWait       = 100 * time.Millisecond
	restartBackoffMax = 4 * time.Second
)

// Checkpoint modes, as the metrics name them.
const (
	CheckpointPassive  = "passive"
	CheckpointRestart  = "restart"
	CheckpointTruncate = "truncate"
)

// Checkpoint outcomes.
const (
	// CheckpointDone: every frame of the WAL is in the database; after a
	// RESTART or TRUNCATE, the log starts over.
	CheckpointDone = "done"
	// CheckpointPartial: frames were left uncopied, because a reader still
	// needed what they would overwrite or because the writer appended
	// meanwhile (the common case of a PASSIVE under load).
	CheckpointPartial = "partial"
	// CheckpointBusy: a RESTART or TRUNCATE could not finish in its wait (a
	// reader kept reading old frames, or another process held the write
	// lock), or another process was checkpointing: the log did not restart.
	CheckpointBusy = "busy"
	// CheckpointError: the checkpoint failed (an I/O error); see the log.
	CheckpointError = "error"
)

// Checkpoint is one WAL checkpoint the store ran, as its observer is told.
type Checkpoint struct {
	Mode    string // CheckpointPassive, CheckpointRestart or CheckpointTruncate
	Outcome string // CheckpointDone, CheckpointPartial, CheckpointBusy or CheckpointError
	// Frames is how many frames the WAL held when the checkpoint ended, and
	// Copied how many of them are in the database; -1 when SQLite did not
	// say (busy, error).
	Frames, Copied int64
	// Took is from asking for the checkpoint connection to the answer. For a
	// RESTART it is how long the writer stopped, the longest any append
	// waited for it.
	Took time.Duration
}

// walBound is the writer's record for bounding the WAL; the writer's alone.
type walBound struct {
	path     string // the -wal file
	max      int64  // 0: no bound
	retryAt  time.Time
	failures int // RESTARTs that failed in a row
}

// checkpoint runs one checkpoint on the checkpoint connection and tells the
// observer of it.
func (s *Store) checkpoint(mode string) Checkpoint {
	start := time.Now()
	busy, c := 0, Checkpoint{Mode: mode, Frames: -1, Copied: -1}
	err := s.cdb.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint("+strings.ToUpper(mode)+")").
		Scan(&busy, &c.Frames, &c.Copied)
	c.Took = time.Since(start)
	switch {
	case err != nil:
		c.Outcome = CheckpointError
	case busy != 0:
		c.Outcome = CheckpointBusy
	case c.Copied < c.Frames:
		c.Outcome = CheckpointPartial
	default:
		c.Outcome = CheckpointDone
	}
	if o := s.ckptObserver.Load(); o != nil {
		o.o.ObserveCheckpoint(c)
	}
	return c
}

// boundWAL runs on the writer goroutine after each group, between two
// transactions: past the bound it hands over for a RESTART. Below it, and
// while backing off, it costs a stat of the WAL (about a microsecond a group).
func (s *Store) boundWAL(now time.Time) {
	b := &s.wal
	if b.max <= 0 || now.Before(b.retryAt) {
		return
	}
	if fi, err := os.Stat(b.path); err != nil || fi.Size() <= b.max {
		return
	}
	if s.checkpoint(CheckpointRestart).Outcome == CheckpointDone {
		b.failures = 0
		return
	}
	b.failures++
	b.retryAt = time.Now().Add(restartBackoff(b.failures))
}

// restartBackoff is how long the writer waits before it tries a RESTART
// again after n failed in a row. The first two retries come at the next
// groups: a reader that was merely slow (on a busy machine a page read can
// take longer than restartWait) has finished by then, and the WAL has grown
// by a group or two. Past that, a reader holds a long transaction, and
// retrying at every group would stop the writer for restartWait each time;
// backing off to restartBackoffMax keeps that under a few percent of its
// time while the WAL grows.
func restartBackoff(n int) time.Duration {
	if n <= 2 {
		return 0
	}
	return min(checkpointEvery<<min(n-3, 8), restartBackoffMax)
}

// runCheckpointer runs a PASSIVE checkpoint every tick until stop is closed;
// one that fails is retried at the next tick (the WAL only grows meanwhile).
// When the writer has been idle for a tick and the file is still over the
// bound (a long reader kept it from restarting while writes came), it
// truncates the WAL instead: nothing then waits for the hand-over.
//
// (Running PASSIVEs back to back near the bound, so that the RESTART finds
// less to copy, was tried: the writer then mostly waited for the PASSIVE in
// flight on the one checkpoint connection, and no shorter stall was measured.)
func (s *Store) runCheckpointer(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	var (
		retryAt  time.Time // a TRUNCATE's, backing off as the writer's RESTART does
		failures int
	)
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			if !now.Before(retryAt) && s.walOverBoundWhileIdle(now) {
				if s.checkpoint(CheckpointTruncate).Outcome == CheckpointDone {
					failures = 0
				} else {
					failures++
					retryAt = time.Now().Add(restartBackoff(failures))
				}
				continue
			}
			s.checkpoint(CheckpointPassive)
		}
	}
}

// walOverBoundWhileIdle reports whether the WAL file is over the bound while
// the writer runs no group, has nothing queued and committed nothing for a
// tick.
func (s *Store) walOverBoundWhileIdle(now time.Time) bool {
	if s.wal.max <= 0 || s.inGroup.Load() || len(s.queue) > 0 ||
		now.Sub(time.Unix(0, s.lastCommit.Load())) < checkpointEvery {
		return false
	}
	fi, err := os.Stat(s.wal.path)
	return err == nil && fi.Size() > s.wal.max
}
