package postgres

import (
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
)

// appendToolSeqsPG is the latest seq, in a session's history, of a call id's
// call and of its result (0: none).
type appendToolSeqsPG struct{ call, result int64 }

// appendToolIDsPG returns the call ids an append's rows make or answer, and
// whether any row is a tool result (only then do stored calls matter).
func appendToolIDsPG(a *appendOpPG) (ids []string, results bool) {
	for i := range a.rows {
		m := &a.rows[i].msg
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
		if m.Role == model.RoleTool {
			results = true
			if m.ToolCallID != nil {
				ids = append(ids, *m.ToolCallID)
			}
		}
	}
	return ids, results
}

// appendCheckToolsPG refuses tool messages that answer no call of the session
// (unknown_tool_call), or a call already answered (duplicate_tool_result), as
// SQLite's checkToolResults does. A call made earlier in the same request
// counts. stored is the session's history as the lookups read it under the
// session's lock; the fresh rows' seqs will follow lastSeq.
func appendCheckToolsPG(a *appendOpPG, fresh []int, lastSeq int64, stored map[string]appendToolSeqsPG) error {
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

// appendToolSeqsQueryPG reads the latest call and result of each call id in
// the session's lineage (a fork's inherited prefix included) in one
// statement, so that it rides in the append's lookup batch; a probe per call
// id and segment, as appendQueueLookupsPG's reads.
const appendToolSeqsQueryPG = lineageSegmentsPG + `
	SELECT 'c', c.id, t.seq FROM unnest($3::text[]) AS c(id) CROSS JOIN segments g CROSS JOIN LATERAL (
		SELECT MAX(seq) AS seq FROM tool_calls
		WHERE tenant_id = $1 AND session_id = g.owner AND call_id = c.id AND seq > g.lo AND seq <= g.hi) t
	WHERE t.seq IS NOT NULL
	UNION ALL
	SELECT 'r', c.id, t.seq FROM unnest($3::text[]) AS c(id) CROSS JOIN segments g CROSS JOIN LATERAL (
		SELECT MAX(seq) AS seq FROM tool_results
		WHERE tenant_id = $1 AND session_id = g.owner AND call_id = c.id AND seq > g.lo AND seq <= g.hi) t
	WHERE t.seq IS NOT NULL`

// appendQueueToolSeqsPG queues appendToolSeqsQueryPG, filling out.
func appendQueueToolSeqsPG(b *pgx.Batch, tenant, session string, ids []string, out map[string]appendToolSeqsPG) {
	b.Queue(appendToolSeqsQueryPG, tenant, session, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				kind, id string
				seq      int64
			)
			if err := rows.Scan(&kind, &id, &seq); err != nil {
				return err
			}
			t := out[id]
			if kind == "c" {
				t.call = max(t.call, seq)
			} else {
				t.result = max(t.result, seq)
			}
			out[id] = t
		}
		return rows.Err()
	})
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
