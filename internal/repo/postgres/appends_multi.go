package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// appendSessionJobsPG is one session's appends in a group.
type appendSessionJobsPG struct {
	key  appendQueueKeyPG
	jobs []*appendJobPG
}

// runAppendMultiPG writes the appends of several sessions in one
// transaction and finishes each job, as runAppendGroupPG does for one
// session: one commit, two round trips and one statement per table for the
// whole group, where a transaction per session made 32 clients on 32
// sessions pay 32 of each (issue 21). The sessions' rows are taken only if
// free (SKIP LOCKED), so that a group never waits for one session another
// transaction holds (a long rewind, another process's group): that
// session's appends that must write are left undecided and returned (busy),
// and go back to its queue to be written in a group of their own, which
// waits. A statement the database refused fails the group's writes: each
// session's appends are then written on their own (runAppendGroupPG), so
// only the append that carries it fails.
func (s *Store) runAppendMultiPG(groups []appendSessionJobsPG) (busy map[appendQueueKeyPG][]*appendJobPG) {
	if err := s.faults.Check(repo.PointBegin); err != nil {
		for _, g := range groups {
			for _, j := range g.jobs {
				j.finish(model.AppendResult{}, err)
			}
		}
		return nil
	}
	slices.SortFunc(groups, func(a, b appendSessionJobsPG) int {
		return cmp.Or(cmp.Compare(a.key.tenant, b.key.tenant), cmp.Compare(a.key.session, b.key.session))
	})
	ctx := context.Background() // once queued, an append runs to its end
	for try := 0; ; try++ {
		out, err := s.appendMultiOncePG(ctx, groups)
		var rest []appendSessionJobsPG
		for i, g := range groups {
			var left []*appendJobPG
			for k, j := range g.jobs {
				switch {
				case out[i][k].set:
					j.finish(out[i][k].res, out[i][k].err)
				case out[i][k].busy:
					if busy == nil {
						busy = map[appendQueueKeyPG][]*appendJobPG{}
					}
					busy[g.key] = append(busy[g.key], j)
				default:
					left = append(left, j)
				}
			}
			if len(left) > 0 {
				rest = append(rest, appendSessionJobsPG{key: g.key, jobs: left})
			}
		}
		var pe *pgconn.PgError
		switch {
		case len(rest) == 0:
			return busy
		case retryable(err) && try < 8:
			time.Sleep(time.Duration(1+try*try) * time.Millisecond)
			groups = rest
		case errors.As(err, &pe):
			for _, g := range rest {
				s.runAppendGroupPG(g.jobs)
			}
			return busy
		default:
			for _, g := range rest {
				for _, j := range g.jobs {
					j.finish(model.AppendResult{}, mapErr(err))
				}
			}
			return busy
		}
	}
}

// appendMultiOncePG is one try of a group of sessions: BEGIN, every
// session's lock and lookups in one round trip, the writes and COMMIT in a
// second. err concerns the jobs whose outcome is neither set nor busy.
func (s *Store) appendMultiOncePG(ctx context.Context, groups []appendSessionJobsPG) (out [][]appendOutcomePG, err error) {
	out = make([][]appendOutcomePG, len(groups))
	for i, g := range groups {
		out[i] = make([]appendOutcomePG, len(g.jobs))
	}
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
	inserts := newAppendInsertsPG("", "")
	gs := make([]appendGroupPG, len(groups))
	views := make([]*appendViewPG, len(groups))
	live := make([][]int, len(groups))
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for i, g := range groups {
		var ops []*appendOpPG
		for k, j := range g.jobs {
			if err := s.faults.Check(repo.PointMessageWrite); err != nil {
				out[i][k] = appendOutcomePG{err: err, set: true}
				continue
			}
			live[i] = append(live[i], k)
			ops = append(ops, j.op)
		}
		gs[i] = appendGroupPG{jobs: g.jobs, out: out[i], failed: map[*repo.AppendStream]bool{}, inserts: inserts}
		views[i] = newAppendViewPG()
		if len(ops) > 0 {
			appendQueueLookupsPG(b, ops, views[i], appendLockTry)
		}
	}
	if err := conn.Conn().SendBatch(ctx, b).Close(); err != nil { // runs the callbacks: the views are complete only after it
		return out, err
	}
	var sessions appendSessionUpdatesPG
	for i, g := range groups {
		inserts.tenant, inserts.session = g.key.tenant, g.key.session
		for _, k := range gs[i].decide(views[i], live[i]) { // its row was held: a view without the lock settles no write
			out[i][k] = appendOutcomePG{busy: true}
		}
		if len(gs[i].writers) > 0 {
			sessions.add(g.key.tenant, g.key.session, views[i].ses)
		}
	}
	if len(sessions.tenant) == 0 { // the deferred ROLLBACK ends a transaction that only read
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
	b = &pgx.Batch{}
	inserts.queue(b)
	sessions.queue(b)
	b.Queue("COMMIT")
	if err := appendSendCommitPG(ctx, conn.Conn(), b); err != nil {
		return out, err
	}
	s.kickSequencer()
	if crashAfter { // stored, but the answers are lost
		return out, model.Unavailable(fmt.Errorf("%w: %s", repo.ErrInjected, repo.FaultCrashAfterCommit))
	}
	for i := range gs {
		for _, k := range gs[i].writers {
			out[i][k].set = true
		}
	}
	return out, nil
}
