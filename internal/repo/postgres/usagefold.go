package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
)

// The usage rollups follow the messages in commit order, as the live feed
// does (migration 00026): the sequencer numbers each message's event after
// its transaction commits, and the folder adds the messages of the events it
// has not passed to the rollups and moves usage_state.folded past them, in
// one transaction. An append writes no rollup row, so no row is written by
// every append of a tenant, and a tenant's appends to different sessions
// share no lock.
//
// Any process may fold: usage_state's row lock, taken with SKIP LOCKED,
// makes the folds one at a time (a process that finds it taken leaves the
// round to the other). Rewinds and purges take the same lock shared while
// they take back what was folded (queueTakeBackUsagePG), so a fold never
// runs between what they read and what they remove.
const (
	usageFoldSpanPG  = 4096 // event positions folded by one transaction
	usageFoldEveryPG = 200 * time.Millisecond
	usageFoldPollPG  = 5 * time.Second // for what another process stored and did not fold
)

// kickSequencer says that an append committed: the sequencer numbers its
// events (the feed's readers, in any process, learn of them from the
// sequencer's notification) and then the folder looks.
func (s *Store) kickSequencer() {
	select {
	case s.sequenceWake <- struct{}{}:
	default:
	}
}

// runSequencer numbers committed events whenever appends committed, one
// round at a time: a busy database's appends share rounds. It replaces a
// notification sent by every append, whose lock (PostgreSQL serialises the
// commits of every transaction that notifies) held each append's commit in
// line behind every other's.
func (s *Store) runSequencer(ctx context.Context) {
	defer close(s.sequencerDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.sequenceWake:
		}
		// A failure (the database restarting) is retried by the next append,
		// the folder's poll and any reader's listener.
		if err := sequenceEventsPG(ctx, s.pool); err == nil {
			select {
			case s.usageWake <- struct{}{}:
			default:
			}
		}
	}
}

// runUsageFolder folds while appends go on, every usageFoldEveryPG at most,
// and polls for what other processes left.
func (s *Store) runUsageFolder(ctx context.Context) {
	defer close(s.usageFolderDone)
	poll := time.NewTimer(usageFoldPollPG)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.usageWake:
		case <-poll.C:
			// Events another process stored and did not number (it stopped
			// first) are numbered here.
			if err := sequenceEventsPG(ctx, s.pool); err != nil {
				poll.Reset(usageFoldPollPG)
				continue
			}
		}
		poll.Reset(usageFoldPollPG)
		select { // let the appends of a while share the fold
		case <-ctx.Done():
			return
		case <-time.After(usageFoldEveryPG):
		}
		for {
			more, err := s.foldUsagePG(ctx)
			if err != nil || !more || ctx.Err() != nil {
				break // an error is retried at the next wake-up
			}
		}
	}
}

// foldUsagePG folds the next stretch of numbered events, if no other process
// is folding, and says whether more are numbered.
func (s *Store) foldUsagePG(ctx context.Context) (more bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var folded, last int64
	err = tx.QueryRow(ctx, `SELECT u.folded, q.last_pos FROM usage_state u, event_sequencer q
		WHERE u.one AND q.one FOR UPDATE OF u SKIP LOCKED`).Scan(&folded, &last)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil // another process folds, or a rewind takes back: later
	case err != nil:
		return false, err
	}
	upto := min(last, folded+usageFoldSpanPG)
	if upto <= folded {
		return false, nil
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
			COUNT(*), SUM(m.tokens), SUM(m.cost)
		`+usageStretchPG+`
		GROUP BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = usage_daily.messages + excluded.messages,
			tokens = usage_daily.tokens + excluded.tokens, cost = usage_daily.cost + excluded.cost`, folded, upto)
	b.Queue(`INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, m.session_id, COUNT(*), SUM(m.tokens), SUM(m.cost)
		`+usageStretchPG+`
		GROUP BY 1, 2, 3
		ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = usage_sessions.messages + excluded.messages,
			tokens = usage_sessions.tokens + excluded.tokens, cost = usage_sessions.cost + excluded.cost`, folded, upto)
	b.Queue(`UPDATE usage_state SET folded = $1 WHERE one`, upto)
	if err := appendSendPG(ctx, tx, b); err != nil {
		return false, mapErr(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, mapErr(err)
	}
	return upto < last, nil
}

// usageStretchPG is the messages of the events numbered in ($1, $2] that
// are still stored (a rewind may have taken one since: its event stays).
const usageStretchPG = `FROM events e
	JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
	JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
	WHERE e.pos > $1 AND e.pos <= $2 AND e.type = '` + string(model.EventMessageAppended) + `'`
