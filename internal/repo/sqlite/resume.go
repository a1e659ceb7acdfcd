package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/logbook/logbook/internal/model"
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
	problems = append(problems, h.problems...)
	for i := range problems {
		problems[i].Repair = model.SuggestRepair(problems[i].Code, problems[i].Seq, r.Session, iteration)
	}
	for i := range h.warnings {
		h.warnings[i].Repair = model.SuggestRepair(h.warnings[i].Code, h.warnings[i].Seq, r.Session, iteration)
	}
	r.Validation.Warnings = h.warnings

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

// history is what checkHistory found.
type history struct {
	problems, warnings []model.ResumeProblem
	unanswered         []unansweredCall // in seq order
	turns              int64            // user messages in the rows
}

// unansweredCall is a tool call with no result that no checkpoint lists as
// pending.
type unansweredCall struct {
	id, name string
	seq      int64
}

// checkHistory walks the whole history once, reading only what the checks need:
// seqs must run 1..last_seq with no gap, the counters must equal the rows, every
// tool result must answer an earlier call, and every call must be answered or
// listed as pending by the checkpoint.
func checkHistory(ctx context.Context, q querier, tenant string, segs []segment, ses model.Session,
	pending []model.PendingToolCall) (history, error) {
	var (
		h                           = history{problems: []model.ResumeProblem{}, warnings: []model.ResumeProblem{}}
		expect, count, tokens int64 = 1, 0, 0
		cost                  float64
		calls                 = map[string]unansweredCall{} // until answered
	)
	report := func(code string, seq int64, format string, args ...any) {
		p := model.ResumeProblem{Code: code, Detail: fmt.Sprintf(format, args...)}
		if seq > 0 {
			p.Seq = &seq
		}
		h.problems = append(h.problems, p)
	}
	for _, g := range segs {
		rows, err := q.QueryContext(ctx, `SELECT seq, role, tool_calls, tool_call_id, tokens, cost FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq`, tenant, g.owner, g.lo, g.hi)
		if err != nil {
			return h, mapErr(err)
		}
		for rows.Next() {
			var (
				seq, tk    int64
				role       model.Role
				toolCalls  sql.NullString
				toolCallID sql.NullString
				c          float64
			)
			if err := rows.Scan(&seq, &role, &toolCalls, &toolCallID, counterInt{&tk}, counterFloat{&c}); err != nil {
				rows.Close()
				return h, mapErr(err)
			}
			if seq != expect {
				report(model.ProblemSeqGap, seq, "expected seq %d, found %d", expect, seq)
			}
			expect = seq + 1
			count, tokens, cost = count+1, tokens+tk, cost+c
			if role == model.RoleUser {
				h.turns++
			}
			if toolCalls.Valid {
				var tcs []model.ToolCall
				if json.Unmarshal([]byte(toolCalls.String), &tcs) == nil {
					for _, tc := range tcs {
						calls[tc.ID] = unansweredCall{id: tc.ID, name: tc.Name, seq: seq}
					}
				}
			}
			if role == model.RoleTool && toolCallID.Valid {
				if _, ok := calls[toolCallID.String]; !ok {
					report(model.ProblemOrphanToolResult, seq, "tool result for call %q matches no earlier assistant tool call "+
						"(or a second result for it): rewind to seq %d to drop it and what followed, or fork at seq %d to keep this session as it is",
						toolCallID.String, seq-1, seq-1)
				}
				delete(calls, toolCallID.String)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return h, mapErr(err)
		}
	}
	for _, p := range pending {
		delete(calls, p.ID)
	}
	for _, c := range calls {
		h.unanswered = append(h.unanswered, c)
	}
	slices.SortFunc(h.unanswered, func(a, b unansweredCall) int { return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.id, b.id)) })
	for _, c := range h.unanswered {
		report(model.ProblemUnansweredToolCall, c.seq, "tool call %q has no result and is not pending in the checkpoint", c.id)
	}
	if count != ses.MessageCount || expect-1 != ses.LastSeq || tokens != ses.TotalTokens || math.Abs(cost-ses.TotalCost) > 1e-9*max(1, math.Abs(cost)) {
		report(model.ProblemCounterMismatch, 0, "the rows hold %d messages up to seq %d with %d tokens and cost %v; the session says %d, %d, %d, %v",
			count, expect-1, tokens, cost, ses.MessageCount, ses.LastSeq, ses.TotalTokens, ses.TotalCost)
	}
	if h.turns != ses.TurnCount {
		h.warnings = append(h.warnings, model.ResumeProblem{Code: model.ProblemTurnCountMismatch,
			Detail: fmt.Sprintf("the rows hold %d user messages; the session's turn_count says %d", h.turns, ses.TurnCount)})
	}
	return h, nil
}
