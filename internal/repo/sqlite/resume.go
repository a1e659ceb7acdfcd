package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/history"
)

// Resume gathers what a new worker needs to continue a session: the latest
// checkpoint, the messages after it, the tool calls it left pending, and a report
// of anything inconsistent. It reads only; it never repairs. Errors: KindNotFound.
func (s *Store) Resume(ctx context.Context, tenant, sessionID string) (model.Resume, error) {
	var r model.Resume
	// One read transaction, so that the session, its checkpoint and its messages
	// are one consistent snapshot.
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return r, mapErr(err)
	}
	defer tx.Rollback()

	if r.Session, err = getSession(ctx, tx, tenant, sessionID); err != nil {
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
	cp, err := getCheckpoint(ctx, tx, tenant, sessionID, 0)
	switch {
	case model.IsNotFound(err, "checkpoint"):
	case isCorrupted(err) && cp.State == nil:
		// Nothing of its state could be rebuilt: there is no checkpoint to
		// hand over, and the worker starts from the messages.
		report("checkpoint_corrupted", nil, "checkpoint %s (iteration %d) cannot be read back", cp.ID, cp.Iteration)
		iteration = cp.Iteration
	case err != nil && !isCorrupted(err):
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

	segs, err := lineage(ctx, tx, tenant, sessionID)
	if err != nil {
		return r, err
	}
	h, err := checkHistory(ctx, tx, tenant, segs, r.Session, r.PendingToolCalls)
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

	page, err := listLineage(ctx, tx, tenant, segs, since, model.ResumeMessageLimit)
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

// listLineage reads up to n+1 messages after seq `after`, across a lineage.
func listLineage(ctx context.Context, q querier, tenant string, segs []segment, after int64, n int) ([]model.Message, error) {
	out := []model.Message{}
	for _, g := range segs {
		if len(out) > n || g.hi <= after {
			continue
		}
		rows, err := q.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
			tenant, g.owner, max(after, g.lo), g.hi, n+1-len(out))
		if err != nil {
			return nil, mapErr(err)
		}
		ms, err := collect(rows, func(sc scanner) (model.Message, error) { return scanMessage(sc) })
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// checkHistory feeds the whole history, in seq order, to the shared checks,
// reading only the columns they need.
func checkHistory(ctx context.Context, q querier, tenant string, segs []segment, ses model.Session,
	pending []model.PendingToolCall) (history.Result, error) {
	c := history.NewChecker()
	for _, g := range segs {
		rows, err := q.QueryContext(ctx, `SELECT seq, role, tool_calls, tool_call_id, tokens, cost FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq`, tenant, g.owner, g.lo, g.hi)
		if err != nil {
			return history.Result{}, mapErr(err)
		}
		for rows.Next() {
			var (
				r          history.Row
				toolCalls  sql.NullString
				toolCallID sql.NullString
			)
			if err := rows.Scan(&r.Seq, &r.Role, &toolCalls, &toolCallID, counterInt{&r.Tokens}, counterFloat{&r.Cost}); err != nil {
				rows.Close()
				return history.Result{}, mapErr(err)
			}
			if toolCalls.Valid {
				r.ToolCalls = []byte(toolCalls.String)
			}
			if toolCallID.Valid {
				r.ToolCallID = &toolCallID.String
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
