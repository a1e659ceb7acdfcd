package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Rewind removes the session's messages after in.ToSeq, with what describes
// them (checkpoints past it, compactions reaching past it, idempotency keys,
// tool-call index rows, file references; search rows go with the messages),
// and then appends in.Messages, all in one transaction. Forks that share the
// removed messages first take their own copy; a fork rewound below its fork
// point shares less of its parent. Errors as on SQLite: KindNotFound,
// session_closed, stale_seq, validation_failed (to_seq past last_seq), and an
// append's errors for the messages.
//
// The session row is locked before it is read, so expected_last_seq is a
// compare-and-set against every append and rewind of every process.
func (s *Store) Rewind(ctx context.Context, tenant, id string, in model.Rewind) (model.RewindResult, error) {
	now := model.Now()
	rows := make([]appendRowPG, len(in.Messages))
	for i, m := range in.Messages {
		r, err := prepareAppendRowPG(id, now, m)
		if err != nil {
			return model.RewindResult{}, err
		}
		rows[i] = r
	}
	var res model.RewindResult
	err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) (err error) {
		if err := s.faults.Check(repo.PointRewind); err != nil {
			return err
		}
		res, err = s.rewindTxPG(ctx, tx, tenant, id, in, rows, now)
		return err
	})
	if err == nil && len(rows) > 0 {
		s.kickSequencer() // the replacement's message events
	}
	return res, err
}

func (s *Store) rewindTxPG(ctx context.Context, tx pgx.Tx, tenant, id string, in model.Rewind, rows []appendRowPG, now model.Time) (model.RewindResult, error) {
	res := model.RewindResult{RemovedCheckpoints: []int64{}, Messages: []model.Message{}}
	ses, err := getSessionTx(ctx, tx, tenant, id, " FOR UPDATE")
	if err != nil {
		return res, err
	}
	to, err := rewindTargetPG(ctx, tx, tenant, id, in)
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
		return res, model.Invalid(model.FieldError{Field: "to_seq",
			Message: "is past the session's last_seq " + strconv.FormatInt(ses.LastSeq, 10)})
	}
	var released []fileRefPG
	if to < ses.LastSeq {
		if released, err = rewindCutTailPG(ctx, tx, tenant, ses, to, &res); err != nil {
			return res, err
		}
	}
	if err := recordEventPG(ctx, tx, tenant, id, model.EventSessionRewound, repo.RewindEventData(id, to, res)); err != nil {
		return res, err
	}
	if len(rows) > 0 {
		msgs, err := s.rewindAppendTailPG(ctx, tx, tenant, id, rows, now, in.BoundUser)
		if err != nil {
			return res, err
		}
		res.Messages = msgs
	}
	// After the new tail: it may name the files the cut one did.
	if err := collectFilesPG(ctx, tx, tenant, released); err != nil {
		return res, err
	}
	res.Session, err = getSessionTx(ctx, tx, tenant, id, "")
	return res, err
}

// rewindCutTailPG removes everything of the session past seq to, and returns
// the file references it removed, for collectFilesPG. The caller holds the
// session's row lock.
func rewindCutTailPG(ctx context.Context, tx pgx.Tx, tenant string, ses model.Session, to int64, res *model.RewindResult) (released []fileRefPG, err error) {
	id := ses.ID
	forks, err := forkLockSharingPG(ctx, tx, tenant, id, to)
	if err != nil {
		return nil, err
	}
	for _, f := range forks {
		if err := forkDetachPG(ctx, tx, tenant, f); err != nil {
			return nil, err
		}
	}
	b := &pgx.Batch{}
	if ses.ForkedAtSeq != nil && *ses.ForkedAtSeq > to {
		b.Queue(`UPDATE sessions SET forked_at_seq = $1 WHERE tenant_id = $2 AND id = $3 AND prefix_shared = 1`, to, tenant, id)
	}
	// A retry of a removed append must not write it again (appendTxPG
	// answers rewound).
	b.Queue(`INSERT INTO rewound_keys (tenant_id, session_id, kind, key)
		SELECT tenant_id, session_id, 'message', idempotency_key FROM messages
		WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND idempotency_key IS NOT NULL
		ON CONFLICT DO NOTHING`, tenant, id, to)
	b.Queue(`INSERT INTO rewound_keys (tenant_id, session_id, kind, key)
		SELECT tenant_id, session_id, 'request', key FROM request_keys
		WHERE tenant_id = $1 AND session_id = $2 AND `+rewindKeyPastPG+`
		ON CONFLICT DO NOTHING`, tenant, id, to)
	b.Queue(`DELETE FROM request_keys WHERE tenant_id = $1 AND session_id = $2 AND `+rewindKeyPastPG, tenant, id, to)
	if err := appendSendPG(ctx, tx, b); err != nil {
		return nil, err
	}
	if released, err = forgetFileRefsPG(ctx, tx, tenant, id, to+1); err != nil {
		return nil, err
	}
	b = &pgx.Batch{}
	queueTakeBackUsagePG(b, tenant, id, to) // before the rows go
	for _, table := range []string{"tool_calls", "tool_results", "message_search"} {
		b.Queue(`DELETE FROM `+table+` WHERE tenant_id = $1 AND session_id = $2 AND seq > $3`, tenant, id, to)
	}
	b.Queue(`DELETE FROM messages WHERE tenant_id = $1 AND session_id = $2 AND seq > $3`, tenant, id, to)
	if err := appendSendPG(ctx, tx, b); err != nil {
		return nil, err
	}
	res.RemovedMessages = ses.LastSeq - to // inherited ones too: they left this session's history
	if res.RemovedCheckpoints, err = deleteCheckpointsAfterSeqPG(ctx, tx, tenant, id, to); err != nil {
		return nil, err
	}
	if res.RemovedCheckpoints == nil {
		res.RemovedCheckpoints = []int64{}
	}
	tag, err := tx.Exec(ctx, `DELETE FROM compactions WHERE tenant_id = $1 AND session_id = $2 AND through_seq > $3`, tenant, id, to)
	if err != nil {
		return nil, err
	}
	res.RemovedCompactions = tag.RowsAffected()
	// The counters are the row's at seq to, in what is left of the lineage.
	var t forkTotalsPG
	if to > 0 {
		if t, err = forkTotalsAtPG(ctx, tx, tenant, id, to); err != nil {
			return nil, err
		}
	}
	pause, err := rewindLatestPausePG(ctx, tx, tenant, id)
	if err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `UPDATE sessions SET message_count = $1, last_seq = $1, total_tokens = $2, total_cost = $3,
		turn_count = $4, pause_until = $5, updated_at = $6 WHERE tenant_id = $7 AND id = $8`,
		to, t.tokens, t.cost, t.turns, pause, int64(model.Now()), tenant, id)
	return released, err
}

// rewindKeyPastPG selects the request keys that recorded a seq past $3: the
// whole request leaves with any of its messages.
const rewindKeyPastPG = `EXISTS (SELECT 1 FROM json_array_elements_text(seqs) AS v(seq) WHERE v.seq::bigint > $3)`

// rewindLatestPausePG is the pause_until_ms of the session's newest
// remaining checkpoint, or nil.
func rewindLatestPausePG(ctx context.Context, tx pgx.Tx, tenant, id string) (*int64, error) {
	c, err := getCheckpointPG(ctx, tx, tenant, id, 0)
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

// rewindAppendTailPG appends a rewind's replacement messages in its
// transaction, as one batch append.
func (s *Store) rewindAppendTailPG(ctx context.Context, tx pgx.Tx, tenant, id string, rows []appendRowPG, now model.Time, boundUser string) ([]model.Message, error) {
	// The replacement may reuse the keys of what it replaces.
	var keys []string
	for _, r := range rows {
		if r.key != nil {
			keys = append(keys, *r.key)
		}
	}
	if len(keys) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM rewound_keys WHERE tenant_id = $1 AND session_id = $2 AND kind = 'message'
			AND key = ANY($3)`, tenant, id, keys); err != nil {
			return nil, err
		}
	}
	op := &appendOpPG{tenant: tenant, session: id, rows: rows, now: now,
		req: model.AppendRequest{Messages: make([]model.NewMessage, len(rows)), Batch: true, BoundUser: boundUser}}
	res, err := s.appendTxPG(ctx, tx, op)
	if err != nil {
		return nil, err
	}
	return res.Messages, nil
}
