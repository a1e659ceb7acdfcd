package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// RepairSession applies the repairs that change no history a runtime wrote:
// a tool result saying "interrupted" for each call that has none and that the
// latest checkpoint does not list as pending (as the OpenAI Agents SDK and
// Claude Code do after a crash), and a turn_count recounted from the rows. It
// is idempotent: a second repair finds nothing to do. What it may not repair
// (an orphan result, a gap) it reports with its suggestion. Errors:
// KindNotFound, session_closed, stale_seq.
func (s *Store) RepairSession(ctx context.Context, tenant, id string, in model.RepairSession) (model.RepairResult, error) {
	res := model.RepairResult{Repaired: []model.ResumeProblem{}, Messages: []model.Message{}, Unrepaired: []model.ResumeProblem{}}
	now := model.Now()
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		defer s.sessions.forget(tenant, id) // rebuilt from the rows, whatever the savepoint keeps
		if err := s.crashPoint(repo.PointRepair); err != nil {
			return err
		}
		out, err := s.repairTx(ctx, tx, tenant, id, in, now)
		if err == nil {
			res = out
		}
		return err
	})
	return res, err
}

func (s *Store) repairTx(ctx context.Context, tx *sql.Tx, tenant, id string, in model.RepairSession, now model.Time) (model.RepairResult, error) {
	res := model.RepairResult{Repaired: []model.ResumeProblem{}, Messages: []model.Message{}, Unrepaired: []model.ResumeProblem{}}
	ses, err := getSession(ctx, tx, tenant, id)
	if err != nil {
		return res, err
	}
	switch {
	case ses.Status.Closed():
		return res, &model.Error{Kind: model.KindConflict, Code: "session_closed",
			Msg: "session " + id + " is " + string(ses.Status) + "; reopen it (PATCH status active) to repair"}
	case in.ExpectedLastSeq != nil && *in.ExpectedLastSeq != ses.LastSeq:
		return res, model.StaleSeq(*in.ExpectedLastSeq, ses.LastSeq)
	}
	// A damaged checkpoint lists nothing pending that a runtime could resume.
	var pending []model.PendingToolCall
	iteration := int64(0)
	if cp, err := getCheckpoint(ctx, tx, tenant, id, 0); err == nil {
		iteration = cp.Iteration
		var st model.CheckpointState
		if json.Unmarshal(cp.State, &st) == nil {
			pending = st.PendingToolCalls
		}
	} else if !model.IsNotFound(err, "checkpoint") && !isCorrupted(err) {
		return res, err
	}
	segs, err := lineage(ctx, tx, tenant, id)
	if err != nil {
		return res, err
	}
	h, err := checkHistory(ctx, tx, tenant, segs, ses, pending)
	if err != nil {
		return res, err
	}
	if len(h.Unanswered) > 0 {
		rows := make([]newRow, len(h.Unanswered))
		for i, c := range h.Unanswered {
			meta, err := model.ObjectOf(map[string]any{"logbook_repair": map[string]any{
				"kind": "interrupted_tool_call", "call_seq": c.Seq, "repaired_at": now}})
			if err != nil {
				return res, model.Internal(err)
			}
			callID, name := c.ID, c.Name
			if rows[i], err = prepareRow(id, now, model.NewMessage{Role: model.RoleTool, ToolCallID: &callID, Name: &name,
				IsError: true, Content: model.TextContent(model.InterruptedResult), Metadata: meta}); err != nil {
				return res, err
			}
		}
		if res.Messages, err = s.appendInTx(ctx, tx, tenant, id, rows, now, ""); err != nil {
			return res, err
		}
		for i, c := range h.Unanswered {
			seq := c.Seq
			res.Repaired = append(res.Repaired, model.ResumeProblem{Code: model.ProblemUnansweredToolCall, Seq: &seq,
				Detail: model.InterruptedDetail(c.ID, c.Seq, res.Messages[i].Seq)})
		}
	}
	// The appended results are tool messages: they add no turn.
	if after, err := getSession(ctx, tx, tenant, id); err != nil {
		return res, err
	} else if turns := h.Turns; after.TurnCount != turns {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET turn_count = ? WHERE tenant_id = ? AND id = ?`, turns, tenant, id); err != nil {
			return res, err
		}
		res.Repaired = append(res.Repaired, model.ResumeProblem{Code: model.ProblemTurnCountMismatch,
			Detail: "turn_count was " + itoa(after.TurnCount) + "; the rows hold " + itoa(turns) + " user messages"})
	}
	if res.Session, err = getSession(ctx, tx, tenant, id); err != nil {
		return res, err
	}
	for _, p := range h.Problems {
		if p.Code == model.ProblemUnansweredToolCall {
			continue
		}
		p.Repair = model.SuggestRepair(p.Code, p.Seq, res.Session, iteration)
		res.Unrepaired = append(res.Unrepaired, p)
	}
	for i := range res.Repaired {
		res.Repaired[i].Repair = model.SuggestRepair(res.Repaired[i].Code, res.Repaired[i].Seq, res.Session, iteration)
	}
	return res, nil
}
