package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// writeOp is one queued write: an append (app), which the writer stages and
// flushes with the rest of its group, or any other write (fn), which runs inside
// its own SAVEPOINT. done receives the outcome only after the transaction commits.
type writeOp struct {
	app  *appendOp
	fn   func(ctx context.Context, tx *sql.Tx) error
	done chan error
}

type writerStats struct {
	commits atomic.Int64
	writes  atomic.Int64
	indexed atomic.Int64
}

// WriterStats counts the writer's work; writes/commits is the mean group size.
type WriterStats struct {
	Commits int64 `json:"commits"`
	Writes  int64 `json:"writes"`
	Indexed int64 `json:"indexed"` // messages added to the search index
}

// Stats reports how many transactions the writer committed, how many writes they
// carried and how many messages it indexed for search.
func (s *Store) Stats() WriterStats {
	return WriterStats{Commits: s.stats.commits.Load(), Writes: s.stats.writes.Load(), Indexed: s.stats.indexed.Load()}
}

var errClosed = &model.Error{Kind: model.KindUnavailable, Code: "storage_unavailable",
	Msg: "the server is shutting down; the request was not applied"}

// write queues fn for the writer and waits for the commit. Check-then-act logic
// belongs inside fn: the writer runs one fn at a time, so nothing can change
// between its read and its write. fn gets a context of the writer's own: the
// caller's may end, but a queued write runs to its end.
//
// Once queued, the write's true outcome is returned even if ctx ends meanwhile:
// a client that went away must not be told "canceled" about a row that committed.
//
// A write whose ctx carries a pending Idempotency-Key claim
// (repo.WithIdempotencyClaim) records the key in its own savepoint, before
// fn: the key commits with the write, or not at all. Only the first write of
// a request claims; appends, which keep keys of their own, never do.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	c := repo.PendingClaim(ctx)
	if c == nil {
		return s.submit(ctx, &writeOp{fn: fn})
	}
	fp := c.Fingerprint() // here: it may read the rest of the request's body
	err := s.submit(ctx, &writeOp{fn: func(ctx context.Context, tx *sql.Tx) error {
		if err := claimIdempotencyKey(ctx, tx, c, fp); err != nil {
			return err
		}
		return fn(ctx, tx)
	}})
	if err == nil {
		c.Committed()
	}
	return err
}

func (s *Store) submit(ctx context.Context, op *writeOp) error {
	if err := s.enqueue(ctx, op); err != nil {
		return err
	}
	return <-op.done
}

// enqueue hands op to the writer; op.done receives its outcome.
func (s *Store) enqueue(ctx context.Context, op *writeOp) error {
	op.done = make(chan error, 1)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errClosed
	}
	select {
	case s.queue <- op:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runWriter is the single writer: it takes whatever is queued (up to maxBatch) and
// commits it as one transaction, so that many concurrent requests share one fsync.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	batch := make([]*writeOp, 0, s.maxBatch)
	// The usage fold's turn when no write comes (usagefold.go); at Open, for
	// what an earlier process left unfolded.
	fold := time.NewTimer(usageFoldEvery)
	if !s.foldsOn || s.gid <= s.usageFolded.Load() {
		fold.Stop()
	}
	defer fold.Stop()
	for {
		var (
			op *writeOp
			ok bool
		)
		select {
		case op, ok = <-s.queue:
		case <-fold.C:
			if s.foldNow() {
				fold.Reset(0)
			}
			continue
		}
		if !ok {
			return
		}
		batch = append(batch[:0], op)
	drain:
		for len(batch) < s.maxBatch {
			select {
			case op, ok := <-s.queue:
				if !ok {
					break drain
				}
				batch = append(batch, op)
			default:
				break drain
			}
		}
		start := time.Now()
		s.inGroup.Store(true)
		s.commit(batch)
		s.inGroup.Store(false)
		now := time.Now()
		s.lastCommit.Store(now.UnixNano())
		if o := s.observer.Load(); o != nil {
			o.o.ObserveGroup(len(batch), now.Sub(start))
		}
		if s.eventsWritten { // perhaps rolled back: a reader woken for nothing reads nothing
			s.eventsWritten = false
			s.events.Signal()
		}
		select { // new messages, perhaps: the indexer looks
		case s.indexWake <- struct{}{}:
		default:
		}
		// And the usage fold: now if its turn came, else when it comes.
		if s.foldDue(now) {
			s.foldNow()
		}
		if s.foldsOn && s.gid > s.usageFolded.Load() {
			fold.Reset(max(0, usageFoldEvery-time.Since(s.lastFold)))
		}
		s.boundWAL(now)
	}
}

// writerCtx is the context of every statement the writer runs. It never ends: a
// request's context reaching a statement would make the driver start a goroutine
// per statement to watch it, and a queued write must finish whatever its caller
// does.
var writerCtx = context.Background()

// commit runs one group as one transaction and answers every write in it.
//
// Appends are staged (their seqs, counters and idempotency decided in memory,
// against the writer's own record of each session) and flushed together: an
// append then costs its INSERT, and each session touched by the group one UPDATE,
// with no SAVEPOINT and no read of the session row. Any other write is a barrier:
// what is staged is flushed first, then it runs in its own SAVEPOINT, so that one
// failing write is undone alone. A flush has nothing left to refuse (the staging
// checked everything), so if one fails anyway (a disk error, a row another
// process wrote), the group is rolled back and replayed one write at a time, and
// only the write at fault fails.
func (s *Store) commit(batch []*writeOp) {
	results, err := s.runGroup(batch)
	if s.lineageMoved { // after the commit, so no read can cache what it replaced
		s.lineages.epoch.Add(1)
		s.lineageMoved = false
	}
	var flushErr flushError
	switch {
	case err == nil:
		s.stats.commits.Add(1)
		s.stats.writes.Add(int64(len(batch)))
		for i, op := range batch {
			op.done <- results[i]
		}
		return
	case !errors.As(err, &flushErr):
	case len(batch) > 1:
		for _, op := range batch {
			s.commit([]*writeOp{op})
		}
		return
	default:
		err = flushErr.err // alone, the write at fault is known
	}
	for i, op := range batch {
		if results[i] == nil { // a write refused for its own reason keeps that reason
			results[i] = err
		}
		if op.app != nil && op.app.stream != nil {
			op.app.stream.Fail()
		}
		op.done <- results[i]
	}
}

// flushError says that a group failed while writing its staged appends, which
// any one of them may have caused.
type flushError struct{ err error }

func (f flushError) Error() string { return "flush: " + f.err.Error() }

// runGroup runs and commits one group. It returns each write's own outcome and,
// when the group as a whole did not commit, why (a flushError: try each alone).
func (s *Store) runGroup(batch []*writeOp) (results []error, err error) {
	ctx := writerCtx
	results = make([]error, len(batch))
	s.pendingCrash = ""
	if err := s.faults.Check(repo.PointBegin); err != nil {
		return results, err
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return results, mapErr(err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
			s.sessions.reset()   // what was staged for this group never happened
			s.usage.invalidate() // nor was what the appends summed stored
		}
	}()
	if err := s.noticeOtherWriters(ctx, tx); err != nil {
		return results, mapErr(err)
	}
	g := newGroup()
	for i, op := range batch {
		if err := s.faults.Check(repo.PointExec); err != nil {
			results[i] = err
			continue
		}
		if op.app != nil {
			results[i] = mapErr(s.stageAppend(ctx, tx, g, op.app))
			continue
		}
		if err := s.flush(ctx, tx, g); err != nil {
			return results, flushError{mapErr(err)}
		}
		if err := s.runInSavepoint(ctx, tx, op.fn); err != nil {
			var fatal fatalTxError
			if errors.As(err, &fatal) {
				return results, fatal.err
			}
			results[i] = err
		}
	}
	if err := s.flush(ctx, tx, g); err != nil {
		return results, flushError{mapErr(err)}
	}

	crash := s.faults.Fire(repo.PointCommit)
	if crash == "" {
		crash = s.pendingCrash
	}
	s.pendingCrash = ""
	switch crash {
	case repo.FaultError, repo.FaultCrashBeforeCommit:
		return results, model.Unavailable(fmt.Errorf("%w: %s at commit", repo.ErrInjected, crash))
	}
	if err := tx.Commit(); err != nil {
		return results, mapErr(err)
	}
	committed = true
	if crash == repo.FaultCrashAfterCommit { // stored, but the answers are lost
		return results, model.Unavailable(fmt.Errorf("%w: %s", repo.ErrInjected, crash))
	}
	return results, nil
}

// fatalTxError is a failure that may have rolled back the whole transaction
// (SQLite does so on some I/O errors): nothing in the group can commit.
type fatalTxError struct{ err error }

func (f fatalTxError) Error() string { return f.err.Error() }

// runInSavepoint runs fn in its own SAVEPOINT, so that its failure undoes it
// alone. A failure of the SAVEPOINT statements themselves is fatal to the group.
func (s *Store) runInSavepoint(ctx context.Context, tx *sql.Tx, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if _, err := tx.StmtContext(ctx, s.st.savepoint).ExecContext(ctx); err != nil {
		return fatalTxError{mapErr(err)}
	}
	err := call(fn, ctx, tx)
	if err != nil {
		err = mapErr(err)
		if _, rerr := tx.StmtContext(ctx, s.st.rollbackTo).ExecContext(ctx); rerr != nil {
			return fatalTxError{mapErr(rerr)}
		}
	}
	if _, rerr := tx.StmtContext(ctx, s.st.release).ExecContext(ctx); rerr != nil {
		return fatalTxError{mapErr(rerr)}
	}
	return err
}

// noticeOtherWriters forgets what the writer remembers of sessions, and takes
// the highest gid from the file, when another process (the CLI's import) has
// written since the writer's last commit. Under the write lock that BEGIN took,
// nothing can change it again until this group commits.
func (s *Store) noticeOtherWriters(ctx context.Context, tx *sql.Tx) error {
	var v int64
	if err := tx.StmtContext(ctx, s.st.dataVersion).QueryRowContext(ctx).Scan(&v); err != nil {
		return err
	}
	if v == s.dataVersion {
		return nil
	}
	s.dataVersion = v
	s.sessions.reset()
	s.usage.invalidate() // its messages are not in the appends' sums
	s.lineageMoved = true
	var maxGID int64
	if err := tx.StmtContext(ctx, s.st.maxGID).QueryRowContext(ctx).Scan(&maxGID); err != nil {
		return err
	}
	s.gid = max(s.gid, maxGID)
	return nil
}

// call runs fn, turning a panic into an error so that one bad write cannot take
// the writer, and with it every other request, down.
func call(fn func(ctx context.Context, tx *sql.Tx) error, ctx context.Context, tx *sql.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = model.Internal(fmt.Errorf("panic in write: %v", r))
		}
	}()
	return fn(ctx, tx)
}
