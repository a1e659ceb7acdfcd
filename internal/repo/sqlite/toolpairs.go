package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
)

// toolSeqs is the latest seq, in a session's history, of a call id's call and
// of its result (0: none).
type toolSeqs struct{ call, result int64 }

// checkToolResults refuses tool messages that answer no call of the session
// (unknown_tool_call), or a call already answered (duplicate_tool_result). A call
// made earlier in the same request, or staged earlier in the group, counts.
// rows are the append's fresh rows in order; their seqs will follow lastSeq.
func (s *Store) checkToolResults(ctx context.Context, tx *sql.Tx, g *group, a *appendOp, fresh []int, lastSeq int64) error {
	need := false
	for _, i := range fresh {
		if a.rows[i].msg.Role == model.RoleTool {
			need = true
			break
		}
	}
	if !need {
		return nil
	}
	segs, _, err := lineageWalk(ctx, tx, a.tenant, a.session)
	if err != nil {
		return err
	}
	local := map[string]toolSeqs{} // what this request does, on top of the stored history
	seqsOf := func(id string) (toolSeqs, error) {
		if t, ok := local[id]; ok {
			return t, nil
		}
		if t, ok := g.tools[keyRef{a.tenant, a.session, id}]; ok {
			return t, nil
		}
		return storedToolSeqs(ctx, tx, a.tenant, segs, id)
	}
	seq := lastSeq
	for _, i := range fresh {
		m := &a.rows[i].msg
		seq++
		switch m.Role {
		case model.RoleAssistant:
			for _, c := range m.ToolCalls {
				t, err := seqsOf(c.ID)
				if err != nil {
					return err
				}
				t.call = seq
				local[c.ID] = t
			}
		case model.RoleTool:
			id := *m.ToolCallID
			t, err := seqsOf(id)
			if err != nil {
				return err
			}
			field := "tool_call_id"
			if a.req.Batch {
				field = "messages[" + itoa(int64(i)) + "].tool_call_id"
			}
			switch {
			case t.call == 0:
				return &model.Error{Kind: model.KindInvalid, Code: "unknown_tool_call",
					Msg:    field + ": no assistant message of this session made call " + quote(id),
					Fields: []model.FieldError{{Field: field, Message: "names no tool call of an assistant message of this session"}}}
			case t.result > t.call:
				return &model.Error{Kind: model.KindConflict, Code: "duplicate_tool_result",
					Msg:    field + ": call " + quote(id) + " was answered at seq " + itoa(t.result),
					Fields: []model.FieldError{{Field: field, Message: "names a call that already has a result"}}}
			}
			t.result = seq
			local[id] = t
		}
	}
	return nil
}

// storedToolSeqs reads a call id's latest call and result in a lineage.
func storedToolSeqs(ctx context.Context, tx *sql.Tx, tenant string, segs []segment, id string) (toolSeqs, error) {
	var t toolSeqs
	for _, g := range segs {
		var call, result sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT
			(SELECT MAX(seq) FROM tool_calls WHERE tenant_id = ?1 AND session_id = ?2 AND call_id = ?3 AND seq > ?4 AND seq <= ?5),
			(SELECT MAX(seq) FROM tool_results WHERE tenant_id = ?1 AND session_id = ?2 AND call_id = ?3 AND seq > ?4 AND seq <= ?5)`,
			tenant, g.owner, id, g.lo, g.hi).Scan(&call, &result)
		if err != nil {
			return t, err
		}
		t.call, t.result = max(t.call, call.Int64), max(t.result, result.Int64)
	}
	return t, nil
}

// noteToolRows records a staged row's calls and result for later appends of
// the group, and indexes them at the flush.
func (g *group) noteToolRows(tenant, session string, m *model.Message) {
	for _, c := range m.ToolCalls {
		k := keyRef{tenant, session, c.ID}
		t := g.tools[k]
		t.call = m.Seq
		g.tools[k] = t
	}
	if m.Role == model.RoleTool && m.ToolCallID != nil {
		k := keyRef{tenant, session, *m.ToolCallID}
		t := g.tools[k]
		t.result = m.Seq
		g.tools[k] = t
	}
}

// indexToolRows writes a stored message's calls and result to the indexes.
func indexToolRows(ctx context.Context, tx *sql.Tx, tenant, session string, m *model.Message) error {
	for _, c := range m.ToolCalls {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO tool_calls (tenant_id, session_id, call_id, seq) VALUES (?, ?, ?, ?)`,
			tenant, session, c.ID, m.Seq); err != nil {
			return err
		}
	}
	if m.Role == model.RoleTool && m.ToolCallID != nil {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO tool_results (tenant_id, session_id, call_id, seq) VALUES (?, ?, ?, ?)`,
			tenant, session, *m.ToolCallID, m.Seq); err != nil {
			return err
		}
	}
	return nil
}

// dropToolRows forgets the tool index rows of a session's messages after seq.
func dropToolRows(ctx context.Context, tx *sql.Tx, tenant, session string, after int64) error {
	for _, table := range []string{"tool_calls", "tool_results"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ? AND session_id = ? AND seq > ?`,
			tenant, session, after); err != nil {
			return err
		}
	}
	return nil
}

// copyToolRows gives a fork that takes its prefix over the index rows of it.
func copyToolRows(ctx context.Context, tx *sql.Tx, tenant, fork string, g segment) error {
	for _, table := range []string{"tool_calls", "tool_results"} {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO `+table+` (tenant_id, session_id, call_id, seq)
			SELECT tenant_id, ?, call_id, seq FROM `+table+` WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ?`,
			fork, tenant, g.owner, g.lo, g.hi); err != nil {
			return err
		}
	}
	return nil
}

func quote(s string) string { return `"` + s + `"` }
