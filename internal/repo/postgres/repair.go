package postgres

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// RepairSession applies the repairs that change no history a runtime wrote,
// as SQLite's does: an "interrupted" tool result for each call that has none
// and that the latest checkpoint does not list as pending, and a turn_count
// recounted from the rows. It is idempotent. What it may not repair (an
// orphan result, a gap) it reports with its suggestion. Errors: KindNotFound,
// session_closed, stale_seq.
func (s *Store) RepairSession(ctx context.Context, tenant, id string, in model.RepairSession) (model.RepairResult, error) {
	res := model.RepairResult{Repaired: []model.ResumeProblem{}, Messages: []model.Message{}, Unrepaired: []model.ResumeProblem{}}
	now := model.Now()
	err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointRepair); err != nil {
			return err
		}
		out, err := s.repairTxPG(ctx, tx, tenant, id, in, now)
		if err == nil {
			res = out
		}
		return err
	})
	if err == nil && len(res.Messages) > 0 {
		s.kickSequencer() // the appended results' message events
	}
	return res, err
}

// repairTxPG decides and writes a repair. The session row is locked before
// the history is read: an append of another process waits for the repair, so
// a call it answers meanwhile is not answered twice, and the expected_last_seq
// fence holds until the commit.
func (s *Store) repairTxPG(ctx context.Context, tx pgx.Tx, tenant, id string, in model.RepairSession, now model.Time) (model.RepairResult, error) {
	res := model.RepairResult{Repaired: []model.ResumeProblem{}, Messages: []model.Message{}, Unrepaired: []model.ResumeProblem{}}
	ses, err := getSessionTx(ctx, tx, tenant, id, " FOR UPDATE")
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
	if cp, err := getCheckpointPG(ctx, tx, tenant, id, 0); err == nil {
		iteration = cp.Iteration
		var st model.CheckpointState
		if json.Unmarshal(cp.State, &st) == nil {
			pending = st.PendingToolCalls
		}
	} else if !model.IsNotFound(err, "checkpoint") && !ckstate.IsCorrupted(err) {
		return res, err
	}
	segs, err := lineagePG(ctx, tx, tenant, id)
	if err != nil {
		return res, err
	}
	h, err := resumeCheckHistoryPG(ctx, tx, tenant, segs, ses, pending)
	if err != nil {
		return res, err
	}
	if len(h.Unanswered) > 0 {
		op := &appendOpPG{tenant: tenant, session: id, rows: make([]appendRowPG, len(h.Unanswered)), now: now,
			req: model.AppendRequest{Messages: make([]model.NewMessage, len(h.Unanswered)), Batch: true}}
		for i, c := range h.Unanswered {
			meta, err := model.ObjectOf(map[string]any{"logbook_repair": map[string]any{
				"kind": "interrupted_tool_call", "call_seq": c.Seq, "repaired_at": now}})
			if err != nil {
				return res, model.Internal(err)
			}
			callID, name := c.ID, c.Name
			if op.rows[i], err = prepareAppendRowPG(id, now, model.NewMessage{Role: model.RoleTool, ToolCallID: &callID, Name: &name,
				IsError: true, Content: model.TextContent(model.InterruptedResult), Metadata: meta}); err != nil {
				return res, err
			}
		}
		// The append path, not an insert of its own: the results are
		// numbered, counted, indexed and checked as any append's.
		out, err := s.appendTxPG(ctx, tx, op)
		if err != nil {
			return res, err
		}
		res.Messages = out.Messages
		for i, c := range h.Unanswered {
			seq := c.Seq
			res.Repaired = append(res.Repaired, model.ResumeProblem{Code: model.ProblemUnansweredToolCall, Seq: &seq,
				Detail: model.InterruptedDetail(c.ID, c.Seq, res.Messages[i].Seq)})
		}
	}
	// The appended results are tool messages: they add no turn.
	if after, err := getSessionTx(ctx, tx, tenant, id, ""); err != nil {
		return res, err
	} else if turns := h.Turns; after.TurnCount != turns {
		if _, err := tx.Exec(ctx, `UPDATE sessions SET turn_count = $1 WHERE tenant_id = $2 AND id = $3`, turns, tenant, id); err != nil {
			return res, err
		}
		res.Repaired = append(res.Repaired, model.ResumeProblem{Code: model.ProblemTurnCountMismatch,
			Detail: "turn_count was " + strconv.FormatInt(after.TurnCount, 10) + "; the rows hold " + strconv.FormatInt(turns, 10) + " user messages"})
	}
	if res.Session, err = getSessionTx(ctx, tx, tenant, id, ""); err != nil {
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
