package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// appendOutcomePG is a job's outcome in one try of its group. set: final
// whatever becomes of the group's transaction (a replay, a refusal, or a
// write whose COMMIT answered).
type appendOutcomePG struct {
	res  model.AppendResult
	err  error
	set  bool
	busy bool // not decided: another transaction held its session's row (runAppendMultiPG)
}

// runAppendGroupPG writes a group of appends to one session in one
// transaction and finishes each job. A retryable conflict tries again what is
// not settled; a statement the database refused fails the group's writes,
// so each of them is then tried alone, and only the append that carries it
// fails. A database that cannot be reached fails every write of the group
// with 503 and none is tried again: whether its COMMIT landed is not known,
// and the client's retry, with its idempotency keys, is what settles that.
func (s *Store) runAppendGroupPG(jobs []*appendJobPG) {
	if err := s.faults.Check(repo.PointBegin); err != nil {
		for _, j := range jobs {
			j.finish(model.AppendResult{}, err)
		}
		return
	}
	ctx := context.Background() // once queued, an append runs to its end
	for try := 0; ; try++ {
		out, err := s.appendGroupOncePG(ctx, jobs)
		var rest []*appendJobPG
		for i, j := range jobs {
			if out[i].set {
				j.finish(out[i].res, out[i].err)
			} else {
				rest = append(rest, j)
			}
		}
		var pe *pgconn.PgError
		switch {
		case len(rest) == 0:
			return
		case retryable(err) && try < 8:
			time.Sleep(time.Duration(1+try*try) * time.Millisecond)
			jobs = rest
		case errors.As(err, &pe) && len(rest) > 1:
			for _, j := range rest {
				s.runAppendGroupPG([]*appendJobPG{j})
			}
			return
		default:
			for _, j := range rest {
				j.finish(model.AppendResult{}, mapErr(err))
			}
			return
		}
	}
}

// appendGroupOncePG is one try of a group, pipelined: BEGIN, the session's
// lock and every lookup go in one round trip, the writes and COMMIT in a
// second, so the session's row is held for about one round trip per group.
// The first trip takes the row only if it is free (appendLockTry): a retry of
// a stored append is then answered without waiting for another process's
// appends in flight; what found the row busy and must write waits for it in
// a second trip. err concerns the jobs whose outcome is not set.
func (s *Store) appendGroupOncePG(ctx context.Context, jobs []*appendJobPG) (out []appendOutcomePG, err error) {
	out = make([]appendOutcomePG, len(jobs))
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return out, err
	}
	defer conn.Release() // a connection left inside a transaction is closed, not reused
	defer func() {
		if r := recover(); r != nil { // one bad write must not take the process down
			err = model.Internal(fmt.Errorf("panic in write: %v", r))
		}
		if conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(ctx, "ROLLBACK")
		}
	}()
	if err := s.faults.Check(repo.PointExec); err != nil {
		return out, err
	}
	var live []int
	for i := range jobs {
		if err := s.faults.Check(repo.PointMessageWrite); err != nil {
			out[i] = appendOutcomePG{err: err, set: true}
			continue
		}
		live = append(live, i)
	}
	g := appendGroupPG{jobs: jobs, out: out, failed: map[*repo.AppendStream]bool{},
		inserts: newAppendInsertsPG(jobs[0].op.tenant, jobs[0].op.session)}
	v, err := g.lookup(ctx, conn.Conn(), live, appendLockTry)
	if err != nil {
		return out, err
	}
	if pending := g.decide(v, live); len(pending) > 0 {
		if v, err = g.lookup(ctx, conn.Conn(), pending, appendLockWait); err != nil {
			return out, err
		}
		for _, i := range g.decide(v, pending) { // cannot be: a view read under the lock settles everything
			out[i] = appendOutcomePG{err: model.Internal(errors.New("append left undecided under its session's lock")), set: true}
		}
	}
	if len(g.writers) == 0 { // the deferred ROLLBACK ends a transaction that only read
		return out, nil
	}
	if err := s.faults.Check(repo.PointAppendFlush); err != nil {
		return out, err
	}
	crashAfter := false
	switch k := s.faults.Fire(repo.PointCommit); k {
	case repo.FaultError, repo.FaultCrashBeforeCommit:
		return out, model.Unavailable(fmt.Errorf("%w: %s at commit", repo.ErrInjected, k))
	case repo.FaultCrashAfterCommit:
		crashAfter = true
	}
	b := &pgx.Batch{}
	g.inserts.queue(b)
	appendQueueSessionPG(b, jobs[0].op.tenant, jobs[0].op.session, v.ses)
	b.Queue("COMMIT")
	if err := appendSendCommitPG(ctx, conn.Conn(), b); err != nil {
		return out, err
	}
	s.kickSequencer()
	if crashAfter { // stored, but the answers are lost
		return out, model.Unavailable(fmt.Errorf("%w: %s", repo.ErrInjected, repo.FaultCrashAfterCommit))
	}
	for _, i := range g.writers {
		out[i].set = true
	}
	return out, nil
}

// appendGroupPG is a group's decisions in one try.
type appendGroupPG struct {
	jobs    []*appendJobPG
	out     []appendOutcomePG
	writers []int                       // the jobs decided with writes
	inserts *appendInsertsPG            // theirs
	failed  map[*repo.AppendStream]bool // streams an earlier job of this try stopped
}

// lookup reads what the jobs at idx decide on.
func (g *appendGroupPG) lookup(ctx context.Context, conn *pgx.Conn, idx []int, lock appendLock) (*appendViewPG, error) {
	ops := make([]*appendOpPG, len(idx))
	for n, i := range idx {
		ops[n] = g.jobs[i].op
	}
	v := newAppendViewPG()
	b := &pgx.Batch{}
	if conn.PgConn().TxStatus() == 'I' {
		b.Queue("BEGIN")
	}
	if len(ops) > 0 {
		appendQueueLookupsPG(b, ops, v, lock)
	}
	return v, conn.SendBatch(ctx, b).Close() // runs the callbacks: v is complete only after it
}

// decide decides the jobs at idx in order, each seeing the writes of those
// before it, and returns those v cannot settle (it was read without the
// session's lock).
func (g *appendGroupPG) decide(v *appendViewPG, idx []int) (pending []int) {
	for _, i := range idx {
		j := g.jobs[i]
		// SQLite checks the stream inside its writer, when it reaches the append.
		if j.stream != nil && (j.stream.Failed() || g.failed[j.stream]) {
			g.out[i] = appendOutcomePG{err: appendStreamStoppedPG, set: true}
			continue
		}
		plan, settled, err := appendDecidePG(j.op, v, g.inserts)
		switch {
		case !settled:
			pending = append(pending, i)
		case err != nil:
			g.out[i] = appendOutcomePG{err: err, set: true}
			if j.stream != nil {
				g.failed[j.stream] = true
			}
		case !plan.wrote:
			g.out[i] = appendOutcomePG{res: plan.res, set: true}
		default:
			appendApplyPG(v, j.op, plan)
			g.out[i] = appendOutcomePG{res: plan.res}
			g.writers = append(g.writers, i)
		}
	}
	return pending
}

// appendSendCommitPG runs writes that end in COMMIT and returns their first
// error. A COMMIT of a transaction that failed answers ROLLBACK, not an error:
// that is an error too.
func appendSendCommitPG(ctx context.Context, conn *pgx.Conn, b *pgx.Batch) error {
	br := conn.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	for range b.Len() {
		var err error
		if tag, err = br.Exec(); err != nil {
			_ = br.Close()
			return err
		}
	}
	if err := br.Close(); err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		return model.Internal(fmt.Errorf("append: COMMIT answered %q", tag.String()))
	}
	return nil
}
