package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// refuseRewound answers a key that was not found: if a rewind removed what it
// named, writing it again would quietly undo the rewind (rewound); otherwise
// the key is new. The bool is for replayRequest's signature: never true.
func (s *Store) refuseRewound(ctx context.Context, tx *sql.Tx, tenant, session, kind, key, field string) (bool, error) {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM rewound_keys WHERE tenant_id = ? AND session_id = ? AND kind = ? AND key = ?`,
		tenant, session, kind, key).Scan(&one)
	switch {
	case err == sql.ErrNoRows:
		return false, nil
	case err != nil:
		return false, err
	}
	return false, model.Rewound(field, key)
}

// Rewind removes the session's messages after in.ToSeq, with what describes
// them (checkpoints past it, compactions reaching past it, search-index rows,
// file references), and then appends in.Messages, all in one transaction.
// Forks that share the removed messages first take their own copy; a fork
// rewound below its fork point shares less of its parent. Errors:
// KindNotFound, session_closed, stale_seq, validation_failed (to_seq past
// last_seq), and an append's errors for the messages.
func (s *Store) Rewind(ctx context.Context, tenant, id string, in model.Rewind) (model.RewindResult, error) {
	now := model.Now()
	rows := make([]newRow, len(in.Messages))
	for i, m := range in.Messages {
		r, err := prepareRow(id, now, m)
		if err != nil {
			return model.RewindResult{}, err
		}
		rows[i] = r
	}
	var res model.RewindResult
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		// Whatever happens, the writer's record of the session is rebuilt from
		// the rows: the savepoint may roll back what this wrote.
		defer s.sessions.forget(tenant, id)
		if err := s.crashPoint(repo.PointRewind); err != nil {
			return err
		}
		res, err = s.rewindTx(ctx, tx, tenant, id, in, rows, now)
		return err
	})
	return res, err
}

func (s *Store) rewindTx(ctx context.Context, tx *sql.Tx, tenant, id string, in model.Rewind, rows []newRow, now model.Time) (model.RewindResult, error) {
	res := model.RewindResult{RemovedCheckpoints: []int64{}, Messages: []model.Message{}}
	ses, err := getSession(ctx, tx, tenant, id)
	if err != nil {
		return res, err
	}
	to, err := s.rewindTarget(ctx, tx, tenant, id, in)
	if err != nil {
		return res, err
	}
	switch {
	case ses.Status.Closed():
		return res, &model.Error{Kind: model.KindConflict, Code: "session_closed",
			Msg: "session " + id + " is " + string(ses.Status) + "; reopen it (PATCH status active) to rewind"}
	case in.ExpectedLastSeq != nil && *in.ExpectedLastSeq != ses.LastSeq:
		return res, model.StaleSeq(*in.ExpectedLastSeq, ses.LastSeq)
	case to > ses.LastSeq:
		return res, model.Invalid(model.FieldError{Field: "to_seq", Message: "is past the session's last_seq " + itoa(ses.LastSeq)})
	}
	var released []fileRef
	if to < ses.LastSeq {
		if released, err = s.cutTail(ctx, tx, tenant, ses, to, &res); err != nil {
			return res, err
		}
	}
	if err := s.recordEvent(ctx, tx, tenant, id, model.EventSessionRewound, repo.RewindEventData(id, to, res)); err != nil {
		return res, err
	}
	if len(rows) > 0 {
		msgs, err := s.appendInTx(ctx, tx, tenant, id, rows, now, in.BoundUser)
		if err != nil {
			return res, err
		}
		res.Messages = msgs
	}
	// After the new tail: it may name the files the cut one did.
	if err := collectFiles(ctx, tx, tenant, released); err != nil {
		return res, err
	}
	res.Session, err = getSession(ctx, tx, tenant, id)
	return res, err
}

// rewindTarget is the seq a rewind keeps: to_seq, or the seq of the message
// named by to_client_id (kept) or from_client_id (removed too).
func (s *Store) rewindTarget(ctx context.Context, tx *sql.Tx, tenant, id string, in model.Rewind) (int64, error) {
	field, cid := "to_client_id", in.ToClientID
	if in.FromClientID != nil {
		field, cid = "from_client_id", in.FromClientID
	}
	if cid == nil {
		return *in.ToSeq, nil
	}
	segs, err := lineage(ctx, tx, tenant, id)
	if err != nil {
		return 0, err
	}
	m, ok, err := messageByClientID(ctx, tx, tenant, segs, *cid)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, model.ClientIDNotFound(field, *cid)
	case in.FromClientID != nil:
		return m.Seq - 1, nil
	}
	return m.Seq, nil
}

// cutTail removes everything of the session past seq to, and returns the file
// references it removed, for collectFiles.
func (s *Store) cutTail(ctx context.Context, tx *sql.Tx, tenant string, ses model.Session, to int64, res *model.RewindResult) (released []fileRef, err error) {
	id := ses.ID
	s.lineageMoved = true // forks detach; this session may share less of its parent
	forks, err := forksPast(ctx, tx, tenant, id, to)
	if err != nil {
		return nil, err
	}
	for _, f := range forks {
		if err := s.detachFork(ctx, tx, tenant, f); err != nil {
			return nil, err
		}
	}
	if ses.ForkedAtSeq != nil && *ses.ForkedAtSeq > to {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET forked_at_seq = ? WHERE tenant_id = ? AND id = ? AND prefix_shared = 1`,
			to, tenant, id); err != nil {
			return nil, err
		}
	}
	// A retry of a removed append must not write it again (refuseRewound).
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO rewound_keys (tenant_id, session_id, kind, key)
		SELECT tenant_id, session_id, 'message', idempotency_key FROM messages
		WHERE tenant_id = ? AND session_id = ? AND seq > ? AND idempotency_key IS NOT NULL`, tenant, id, to); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO rewound_keys (tenant_id, session_id, kind, key)
		SELECT tenant_id, session_id, 'request', key FROM request_keys
		WHERE tenant_id = ?1 AND session_id = ?2 AND EXISTS (SELECT 1 FROM json_each(seqs) WHERE value > ?3)`, tenant, id, to); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM request_keys
		WHERE tenant_id = ?1 AND session_id = ?2 AND EXISTS (SELECT 1 FROM json_each(seqs) WHERE value > ?3)`, tenant, id, to); err != nil {
		return nil, err
	}
	if err := s.noteDeletedMessages(ctx, tx, tenant, id, to, ses.LastSeq); err != nil {
		return nil, err
	}
	if released, err = forgetFileRefs(ctx, tx, tenant, id, to+1); err != nil {
		return nil, err
	}
	if err := dropToolRows(ctx, tx, tenant, id, to); err != nil {
		return nil, err
	}
	if err := takeBackUsage(ctx, tx, tenant, id, to); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE tenant_id = ? AND session_id = ? AND seq > ?`, tenant, id, to); err != nil {
		return nil, err
	}
	res.RemovedMessages = ses.LastSeq - to // inherited ones too: they left this session's history
	if res.RemovedCheckpoints, err = deleteCheckpointsAfterSeq(ctx, tx, tenant, id, to); err != nil {
		return nil, err
	}
	if res.RemovedCheckpoints == nil {
		res.RemovedCheckpoints = []int64{}
	}
	if res.RemovedCompactions, err = execCount(ctx, tx, `DELETE FROM compactions WHERE tenant_id = ? AND session_id = ? AND through_seq > ?`,
		tenant, id, to); err != nil {
		return nil, err
	}
	// The counters are the row's at seq to, in what is left of the lineage.
	var t runningTotals
	if to > 0 {
		segs, err := lineage(ctx, tx, tenant, id)
		if err != nil {
			return nil, err
		}
		_, totals, ok, err := messageAt(ctx, tx, tenant, segs, to)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, model.Internal(errMissingSeq(id, to))
		}
		t = totals
	}
	pause, err := latestPause(ctx, tx, tenant, id)
	if err != nil {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE sessions SET message_count = ?, last_seq = ?, total_tokens = ?, total_cost = ?,
		turn_count = ?, pause_until = ?, updated_at = ? WHERE tenant_id = ? AND id = ?`,
		to, to, t.tokens, t.cost, t.turns, pause, time.Now().UnixMilli(), tenant, id)
	return released, err
}

// forksPast lists the forks that share this session's messages past seq.
func forksPast(ctx context.Context, q querier, tenant, id string, seq int64) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM sessions INDEXED BY sessions_by_parent
		WHERE tenant_id = ? AND parent_id = ? AND prefix_shared = 1 AND forked_at_seq > ? ORDER BY id`, tenant, id, seq)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(sc scanner) (string, error) {
		var f string
		return f, sc.Scan(&f)
	})
}

// latestPause is the pause_until_ms of the session's newest checkpoint, or nil.
func latestPause(ctx context.Context, tx *sql.Tx, tenant, id string) (*int64, error) {
	c, err := getCheckpoint(ctx, tx, tenant, id, 0)
	if model.IsNotFound(err, "checkpoint") {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := model.ParseState(c.State)
	if err != nil {
		return nil, err
	}
	return st.PauseUntilMs, nil
}

// appendInTx stages and flushes rows as one batch append inside a write that
// is already running (a rewind's replacement tail).
func (s *Store) appendInTx(ctx context.Context, tx *sql.Tx, tenant, id string, rows []newRow, now model.Time, boundUser string) ([]model.Message, error) {
	// The replacement may reuse the keys of what it replaces.
	for _, r := range rows {
		if r.key != nil {
			if _, err := tx.ExecContext(ctx, `DELETE FROM rewound_keys WHERE tenant_id = ? AND session_id = ? AND kind = 'message' AND key = ?`,
				tenant, id, *r.key); err != nil {
				return nil, err
			}
		}
	}
	s.sessions.forget(tenant, id)
	msgs := make([]model.NewMessage, len(rows))
	op := &appendOp{tenant: tenant, session: id, req: model.AppendRequest{Messages: msgs, Batch: true, BoundUser: boundUser}, rows: rows, now: now}
	g := newGroup()
	if err := s.stageAppend(ctx, tx, g, op); err != nil {
		return nil, err
	}
	if err := s.flush(ctx, tx, g); err != nil {
		return nil, err
	}
	return op.result.Messages, nil
}
