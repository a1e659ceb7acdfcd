package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
)

// appendToolSeqsPG is the latest seq, in a session's history, of a call id's
// call and of its result (0: none).
type appendToolSeqsPG struct{ call, result int64 }

// appendCheckToolsPG refuses tool messages that answer no call of the session
// (unknown_tool_call), or a call already answered (duplicate_tool_result), as
// SQLite's checkToolResults does. A call made earlier in the same request
// counts. The fresh rows' seqs will follow lastSeq.
func appendCheckToolsPG(ctx context.Context, tx pgx.Tx, a *appendOpPG, fresh []int, lastSeq int64) error {
	var ids []string
	need := false
	for _, i := range fresh {
		m := &a.rows[i].msg
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
		if m.Role == model.RoleTool {
			need = true
			if m.ToolCallID != nil {
				ids = append(ids, *m.ToolCallID)
			}
		}
	}
	if !need {
		return nil
	}
	stored, err := appendStoredToolSeqsPG(ctx, tx, a.tenant, a.session, ids)
	if err != nil {
		return err
	}
	local := map[string]appendToolSeqsPG{} // what this request does, on top of the stored history
	seqsOf := func(id string) appendToolSeqsPG {
		if t, ok := local[id]; ok {
			return t
		}
		return stored[id]
	}
	seq := lastSeq
	for _, i := range fresh {
		m := &a.rows[i].msg
		seq++
		switch m.Role {
		case model.RoleAssistant:
			for _, c := range m.ToolCalls {
				t := seqsOf(c.ID)
				t.call = seq
				local[c.ID] = t
			}
		case model.RoleTool:
			id := *m.ToolCallID
			t := seqsOf(id)
			field := "tool_call_id"
			if a.req.Batch {
				field = "messages[" + strconv.Itoa(i) + "].tool_call_id"
			}
			switch {
			case t.call == 0:
				return &model.Error{Kind: model.KindInvalid, Code: "unknown_tool_call",
					Msg:    field + ": no assistant message of this session made call " + `"` + id + `"`,
					Fields: []model.FieldError{{Field: field, Message: "names no tool call of an assistant message of this session"}}}
			case t.result > t.call:
				return &model.Error{Kind: model.KindConflict, Code: "duplicate_tool_result",
					Msg:    field + ": call " + `"` + id + `"` + " was answered at seq " + strconv.FormatInt(t.result, 10),
					Fields: []model.FieldError{{Field: field, Message: "names a call that already has a result"}}}
			}
			t.result = seq
			local[id] = t
		}
	}
	return nil
}

// appendStoredToolSeqsPG reads the latest call and result of each call id in
// the session's lineage (a fork's inherited prefix included).
func appendStoredToolSeqsPG(ctx context.Context, tx pgx.Tx, tenant, session string, ids []string) (map[string]appendToolSeqsPG, error) {
	segs, err := lineagePG(ctx, tx, tenant, session)
	if err != nil {
		return nil, err
	}
	out := map[string]appendToolSeqsPG{}
	for _, g := range segs {
		rows, err := tx.Query(ctx, `SELECT 'c', call_id, MAX(seq) FROM tool_calls
				WHERE tenant_id = $1 AND session_id = $2 AND call_id = ANY($3) AND seq > $4 AND seq <= $5 GROUP BY call_id
			UNION ALL SELECT 'r', call_id, MAX(seq) FROM tool_results
				WHERE tenant_id = $1 AND session_id = $2 AND call_id = ANY($3) AND seq > $4 AND seq <= $5 GROUP BY call_id`,
			tenant, g.owner, ids, g.lo, g.hi)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var (
				kind, id string
				seq      int64
			)
			if err := rows.Scan(&kind, &id, &seq); err != nil {
				rows.Close()
				return nil, err
			}
			t := out[id]
			if kind == "c" {
				t.call = max(t.call, seq)
			} else {
				t.result = max(t.result, seq)
			}
			out[id] = t
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendQueueToolRowsPG indexes a stored message's calls and result.
func appendQueueToolRowsPG(b *pgx.Batch, tenant, session string, m *model.Message) {
	for _, c := range m.ToolCalls {
		b.Queue(`INSERT INTO tool_calls (tenant_id, session_id, call_id, seq) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			tenant, session, c.ID, m.Seq)
	}
	if m.Role == model.RoleTool && m.ToolCallID != nil {
		b.Queue(`INSERT INTO tool_results (tenant_id, session_id, call_id, seq) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			tenant, session, *m.ToolCallID, m.Seq)
	}
}
