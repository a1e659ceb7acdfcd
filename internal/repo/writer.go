package repo

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// writeOp is one queued write. fn runs inside its own SAVEPOINT in the writer's
// transaction; done receives its outcome only after the transaction commits.
type writeOp struct {
	fn   func(tx *sql.Tx) error
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
// between its read and its write.
//
// Once queued, the write's true outcome is returned even if ctx ends meanwhile:
// a client that went away must not be told "canceled" about a row that committed.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	op := &writeOp{fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errClosed
	}
	select {
	case s.queue <- op:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	return <-op.done
}

// runWriter is the single writer: it takes whatever is queued (up to maxBatch) and
// commits it as one transaction, so that many concurrent requests share one fsync.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	batch := make([]*writeOp, 0, s.maxBatch)
	for {
		op, ok := <-s.queue
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
		s.commit(batch)
		s.lastCommit.Store(time.Now().UnixNano())
		select { // new messages, perhaps: the indexer looks
		case s.indexWake <- struct{}{}:
		default:
		}
	}
}

// commit runs one group. Each write has its own SAVEPOINT, so a write that fails
// is undone alone and its neighbours still commit.
func (s *Store) commit(batch []*writeOp) {
	ctx := context.Background() // queued writes finish whatever their callers do
	results := make([]error, len(batch))
	fail := func(err error) {
		for i, op := range batch {
			if results[i] == nil { // a write refused for its own reason keeps that reason
				results[i] = err
			}
			op.done <- results[i]
		}
	}

	s.pendingCrash = ""
	if err := s.faults.check(PointBegin); err != nil {
		fail(err)
		return
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		fail(mapErr(err))
		return
	}
	// Another process (the CLI's import) may have added messages since the last
	// group; under the write lock taken by BEGIN, the highest gid is settled.
	var maxGID int64
	if err := tx.StmtContext(ctx, s.st.maxGID).QueryRowContext(ctx).Scan(&maxGID); err != nil {
		_ = tx.Rollback()
		fail(mapErr(err))
		return
	}
	s.gid = max(s.gid, maxGID)
	for i, op := range batch {
		if err := s.faults.check(PointExec); err != nil {
			results[i] = err
			continue
		}
		if _, err := tx.StmtContext(ctx, s.st.savepoint).ExecContext(ctx); err != nil {
			_ = tx.Rollback()
			fail(mapErr(err))
			return
		}
		if err := call(op.fn, tx); err != nil {
			results[i] = mapErr(err)
			// A failed statement may have rolled back the whole transaction (SQLite
			// does so on some I/O errors); then nothing in this group can commit.
			if _, rerr := tx.StmtContext(ctx, s.st.rollbackTo).ExecContext(ctx); rerr != nil {
				_ = tx.Rollback()
				fail(mapErr(rerr))
				return
			}
		}
		if _, err := tx.StmtContext(ctx, s.st.release).ExecContext(ctx); err != nil {
			_ = tx.Rollback()
			fail(mapErr(err))
			return
		}
	}
	crash := s.faults.fire(PointCommit)
	if crash == "" {
		crash = s.pendingCrash
	}
	s.pendingCrash = ""
	switch crash {
	case FaultError, FaultCrashBeforeCommit:
		_ = tx.Rollback()
		fail(model.Unavailable(fmt.Errorf("%w: %s at commit", ErrInjected, crash)))
		return
	}
	if err := tx.Commit(); err != nil {
		fail(mapErr(err))
		return
	}
	if crash == FaultCrashAfterCommit { // stored, but the answers are lost
		fail(model.Unavailable(fmt.Errorf("%w: %s", ErrInjected, crash)))
		return
	}
	s.stats.commits.Add(1)
	s.stats.writes.Add(int64(len(batch)))
	for i, op := range batch {
		op.done <- results[i]
	}
}

// call runs fn, turning a panic into an error so that one bad write cannot take
// the writer, and with it every other request, down.
func call(fn func(tx *sql.Tx) error, tx *sql.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = model.Internal(fmt.Errorf("panic in write: %v", r))
		}
	}()
	return fn(tx)
}
