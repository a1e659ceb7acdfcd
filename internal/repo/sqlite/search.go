package sqlite

import (
	"context"
	"encoding/json"
	"math"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// searchMessagesKeyword ranks a tenant's messages against a query with bm25: those of one
// agent (its sessions, or messages carrying its id) when in.AgentID is set. Every
// condition is part of the SQL statement that ranks, before the LIMIT. IndexLag
// says how many of the tenant's messages are not searchable yet.
func (s *Store) searchMessagesKeyword(ctx context.Context, tenant string, in model.MessageSearch) (model.SearchResult[model.MessageHit], error) {
	var out model.SearchResult[model.MessageHit]
	if err := s.faults.Check(repo.PointMessageRead); err != nil {
		return out, err
	}
	if in.AgentID != "" {
		if err := agentExists(ctx, s.rdb, tenant, in.AgentID); err != nil {
			return out, err
		}
	}
	if s.idb == nil {
		return out, model.Errorf(model.KindUnavailable, "storage_unavailable", "this store was opened without its search index")
	}
	var err error
	if out.IndexLag, err = indexLag(ctx, s.rdb, tenant); err != nil {
		return out, mapErr(err)
	}
	out.Data = []model.MessageHit{}
	expr := ftsQuery(in.Query)
	if expr == "" {
		return out, nil
	}
	// The index holds a message in parts (see ftsparts.go): rank every matching
	// part in a materialized CTE (bm25 can only be asked there, not under the
	// GROUP BY), then keep each message once, with its best part's rank.
	ftsWhere := []string{"messages_fts MATCH ?", "messages_fts.tenant_id = ?"}
	ftsArgs := []any{expr, tenant}
	if in.SessionID != "" {
		// A fork's history includes its ancestors' prefixes: one segment per
		// session that stores part of it, passed as one JSON list rather than as
		// an OR per segment, which SQLite's expression depth limit would refuse for
		// a deep chain of forks.
		segs, err := s.readLineage(ctx, tenant, in.SessionID)
		if err != nil {
			return out, mapErr(err)
		}
		list := make([][3]any, len(segs))
		for i, g := range segs {
			list[i] = [3]any{g.owner, g.lo, min(g.hi, math.MaxInt64>>1)}
		}
		b, _ := json.Marshal(list)
		ftsWhere = append(ftsWhere, `EXISTS (SELECT 1 FROM json_each(?) g WHERE messages_fts.session_id = g.value->>0
			AND messages_fts.seq > g.value->>1 AND messages_fts.seq <= g.value->>2)`)
		ftsArgs = append(ftsArgs, string(b))
	}
	join := ""
	where := []string{"1 = 1"}
	args := append(ftsArgs, tenant)
	if in.AgentID != "" {
		join = " JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id"
		where, args = append(where, "(s.agent_id = ? OR m.agent_id = ?)"), append(args, in.AgentID, in.AgentID)
	}
	if in.SessionID == "" {
		// A hit names the session that stores it: none past its expires_at.
		// (A fork's search reads its inherited prefix whatever its parent's.)
		where = append(where, "NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = m.tenant_id AND x.id = m.session_id AND x.expires_at <= ?)")
		args = append(args, int64(model.Now()))
	}
	if len(in.Roles) > 0 {
		where = append(where, "m.role IN (?"+strings.Repeat(", ?", len(in.Roles)-1)+")")
		for _, r := range in.Roles {
			args = append(args, r)
		}
	}
	if in.After != nil {
		where, args = append(where, "m.created_at >= ?"), append(args, int64(*in.After))
	}
	if in.Before != nil {
		where, args = append(where, "m.created_at <= ?"), append(args, int64(*in.Before))
	}
	rows, err := s.rdb.QueryContext(ctx, `WITH hits AS MATERIALIZED (
			SELECT session_id, seq, bm25(messages_fts) AS rank FROM idx.messages_fts WHERE `+strings.Join(ftsWhere, " AND ")+`)
		SELECT m.session_id, m.id, m.seq, m.role, m.created_at, m.content, MIN(h.rank) AS best
		FROM hits h
		JOIN messages m ON m.tenant_id = ? AND m.session_id = h.session_id AND m.seq = h.seq`+join+`
		WHERE `+strings.Join(where, " AND ")+`
		GROUP BY m.session_id, m.seq ORDER BY best, m.created_at DESC LIMIT ?`, append(args, in.Limit)...)
	if err != nil {
		return out, mapErr(err)
	}
	hits, err := collect(rows, func(sc scanner) (model.MessageHit, error) {
		var h model.MessageHit
		err := sc.Scan(&h.SessionID, &h.MessageID, &h.Seq, &h.Role, &h.CreatedAt, &h.Content, &h.Rank)
		h.Snippet = repo.Snippet(h.Content, in.Query)
		if in.SessionID != "" {
			h.SessionID = in.SessionID // inherited messages read as the fork's own
		}
		return h, err
	})
	if err != nil {
		return out, err
	}
	if hits != nil {
		out.Data = hits
	}
	return out, nil
}
