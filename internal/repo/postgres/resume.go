package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/history"
)

// resumeSnapshotPG runs fn in a read-only REPEATABLE READ transaction: under
// READ COMMITTED each statement would see its own snapshot, and a resume or a
// context window read across an append or a rewind could mix two histories.
func (s *Store) resumeSnapshotPG(ctx context.Context, fn func(pgx.Tx) error) error {
	return mapErr(pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn))
}

// Resume gathers what a new worker needs to continue a session, from one
// snapshot, as SQLite's Resume does: the latest checkpoint, the messages after
// it, the tool calls it left pending, and a report of anything inconsistent.
// It reads only; it never repairs. Errors: KindNotFound.
func (s *Store) Resume(ctx context.Context, tenant, sessionID string) (model.Resume, error) {
	var r model.Resume
	err := s.resumeSnapshotPG(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = resumeReadPG(ctx, tx, tenant, sessionID)
		return err
	})
	return r, err
}

func resumeReadPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string) (model.Resume, error) {
	var (
		r   model.Resume
		err error
	)
	if r.Session, err = getSessionTx(ctx, tx, tenant, sessionID, ""); err != nil {
		return r, err
	}
	problems := []model.ResumeProblem{}
	report := func(code string, seq *int64, format string, args ...any) {
		problems = append(problems, model.ResumeProblem{Code: code, Seq: seq, Detail: fmt.Sprintf(format, args...)})
	}
	iteration := int64(0)

	r.Validation.SchemaVersion = model.SchemaVersion
	r.PendingToolCalls = []model.PendingToolCall{}
	since := int64(0)
	cp, err := getCheckpointPG(ctx, tx, tenant, sessionID, 0)
	corrupted := ckstate.IsCorrupted(err)
	switch {
	case model.IsNotFound(err, "checkpoint"):
	case corrupted && cp.State == nil:
		// Nothing of its state could be rebuilt: there is no checkpoint to
		// hand over, and the worker starts from the messages.
		report("checkpoint_corrupted", nil, "checkpoint %s (iteration %d) cannot be read back", cp.ID, cp.Iteration)
		iteration = cp.Iteration
	case err != nil && !corrupted:
		return r, err
	default:
		r.Checkpoint = &cp
		since = cp.LastSeq
		iteration = cp.Iteration
		if err != nil {
			report("checkpoint_corrupted", nil, "checkpoint %s (iteration %d) does not match its SHA-256", cp.ID, cp.Iteration)
		}
		var st model.CheckpointState
		if err := json.Unmarshal(cp.State, &st); err != nil {
			report("checkpoint_corrupted", nil, "checkpoint %s state is not readable: %v", cp.ID, err)
		}
		if st.SchemaVersion != nil {
			r.Validation.SchemaVersion = *st.SchemaVersion
			if *st.SchemaVersion > model.SchemaVersion {
				report("schema_version_newer", nil, "checkpoint state is schema version %d; this server understands up to %d",
					*st.SchemaVersion, model.SchemaVersion)
			}
		}
		if st.PendingToolCalls != nil {
			r.PendingToolCalls = st.PendingToolCalls
		}
		if cp.LastSeq > r.Session.LastSeq {
			report("checkpoint_ahead", &cp.LastSeq, "checkpoint %s records last_seq %d but the session's last_seq is %d",
				cp.ID, cp.LastSeq, r.Session.LastSeq)
		}
	}

	segs, err := lineagePG(ctx, tx, tenant, sessionID)
	if err != nil {
		return r, err
	}
	h, err := resumeCheckHistoryPG(ctx, tx, tenant, segs, r.Session, r.PendingToolCalls)
	if err != nil {
		return r, err
	}
	problems = append(problems, h.Problems...)
	for i := range problems {
		problems[i].Repair = model.SuggestRepair(problems[i].Code, problems[i].Seq, r.Session, iteration)
	}
	for i := range h.Warnings {
		h.Warnings[i].Repair = model.SuggestRepair(h.Warnings[i].Code, h.Warnings[i].Seq, r.Session, iteration)
	}
	r.Validation.Warnings = h.Warnings

	page, err := resumeMessagesAfterPG(ctx, tx, tenant, segs, since, model.ResumeMessageLimit)
	if err != nil {
		return r, err
	}
	for i := range page {
		page[i].SessionID = sessionID
	}
	r.MoreMessages = len(page) > model.ResumeMessageLimit
	r.MessagesSinceCheckpoint = page[:min(len(page), model.ResumeMessageLimit)]
	r.Validation.Problems = problems
	r.Validation.OK = len(problems) == 0
	return r, nil
}

// resumeMessagesAfterPG reads up to n+1 messages after seq `after`, across a
// lineage: the one past n says there are more.
func resumeMessagesAfterPG(ctx context.Context, tx pgx.Tx, tenant string, segs []lineageSegment, after int64, n int) ([]model.Message, error) {
	out := []model.Message{}
	for _, g := range segs {
		if len(out) > n || g.hi <= after {
			continue
		}
		rows, err := tx.Query(ctx, `SELECT `+messageColumnsPG+` FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq LIMIT $5`,
			tenant, g.owner, max(after, g.lo), g.hi, n+1-len(out))
		if err != nil {
			return nil, mapErr(err)
		}
		ms, err := msgCollectPG(rows, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// resumeCheckHistoryPG feeds the whole history, in seq order, to the checks
// SQLite's resume runs too (package history), reading only the columns they
// need.
func resumeCheckHistoryPG(ctx context.Context, tx pgx.Tx, tenant string, segs []lineageSegment, ses model.Session,
	pending []model.PendingToolCall) (history.Result, error) {
	c := history.NewChecker()
	for _, g := range segs {
		rows, err := tx.Query(ctx, `SELECT seq, role, tool_calls::text, tool_call_id, tokens, cost FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq`, tenant, g.owner, g.lo, g.hi)
		if err != nil {
			return history.Result{}, mapErr(err)
		}
		var (
			r         history.Row
			role      string
			toolCalls *string
		)
		for rows.Next() {
			r, toolCalls = history.Row{}, nil
			if err := rows.Scan(&r.Seq, &role, &toolCalls, &r.ToolCallID, &r.Tokens, &r.Cost); err != nil {
				rows.Close()
				return history.Result{}, mapErr(err)
			}
			r.Role, r.Cost = model.Role(role), finiteCostPG(r.Cost)
			if toolCalls != nil {
				r.ToolCalls = []byte(*toolCalls)
			}
			c.Add(r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return history.Result{}, mapErr(err)
		}
	}
	return c.Finish(ses, pending), nil
}
