package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// searchMessagesKeyword ranks a tenant's messages against a query, as SQLite's does,
// with PostgreSQL's full-text search: the words of the query joined by OR
// (repo.QueryTerms) as a tsquery over message_search's parts, each message kept
// once with its best part. Rank is -ts_rank_cd, so that lower ranks first on
// both backends; its values differ from SQLite's bm25: ts_rank_cd rewards terms
// that occur close together and does not weigh a term by how rare it is in the
// whole tenant, so with several query words the order may differ. Messages are
// indexed in the transaction that stores them: IndexLag is 0.
func (s *Store) searchMessagesKeyword(ctx context.Context, tenant string, in model.MessageSearch) (model.SearchResult[model.MessageHit], error) {
	out := model.SearchResult[model.MessageHit]{Data: []model.MessageHit{}}
	if err := s.faults.Check(repo.PointMessageRead); err != nil {
		return out, err
	}
	if in.AgentID != "" {
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2`, tenant, in.AgentID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return out, model.NotFound("agent", in.AgentID)
		}
		if err != nil {
			return out, mapErr(err)
		}
	}
	terms := repo.QueryTerms(in.Query)
	if len(terms) == 0 {
		return out, nil
	}
	args := []any{strings.Join(terms, " | "), tenant}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	hitWhere := "ms.tenant_id = $2 AND ms.tsv @@ q"
	if in.SessionID != "" {
		segs, err := readLineagePG(ctx, s.pool, tenant, in.SessionID)
		if err != nil {
			return out, mapErr(err)
		}
		type seg struct {
			O      string `json:"o"`
			Lo, Hi int64
		}
		list := make([]seg, len(segs))
		for i, g := range segs {
			list[i] = seg{g.owner, g.lo, min(g.hi, math.MaxInt64>>1)}
		}
		b, _ := json.Marshal(list)
		hitWhere += ` AND EXISTS (SELECT 1 FROM jsonb_to_recordset(` + arg(string(b)) + `::jsonb) AS g(o text, "Lo" bigint, "Hi" bigint)
			WHERE ms.session_id = g.o AND ms.seq > g."Lo" AND ms.seq <= g."Hi")`
	}
	join, where := "", []string{"TRUE"}
	if in.AgentID != "" {
		join = " JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id"
		a := arg(in.AgentID)
		where = append(where, "(s.agent_id = "+a+" OR m.agent_id = "+a+")")
	}
	if in.SessionID == "" {
		// A hit names the session that stores it: none past its expires_at.
		// (A fork's search reads its inherited prefix whatever its parent's.)
		where = append(where, "NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = m.tenant_id AND x.id = m.session_id AND x.expires_at <= "+arg(int64(model.Now()))+")")
	}
	if len(in.Roles) > 0 {
		roles := make([]string, len(in.Roles))
		for i, r := range in.Roles {
			roles[i] = string(r)
		}
		where = append(where, "m.role = ANY("+arg(roles)+")")
	}
	if in.After != nil {
		where = append(where, "m.created_at >= "+arg(int64(*in.After)))
	}
	if in.Before != nil {
		where = append(where, "m.created_at <= "+arg(int64(*in.Before)))
	}
	limit := arg(in.Limit)
	rows, err := s.pool.Query(ctx, `WITH hits AS MATERIALIZED (
			SELECT ms.session_id, ms.seq, ts_rank_cd(ms.tsv, q) AS r
			FROM message_search ms, to_tsquery('english', $1) q WHERE `+hitWhere+`)
		SELECT m.session_id, m.id, m.seq, m.role, m.created_at, m.content, -MAX(h.r)::float8 AS best
		FROM hits h JOIN messages m ON m.tenant_id = $2 AND m.session_id = h.session_id AND m.seq = h.seq`+join+`
		WHERE `+strings.Join(where, " AND ")+`
		GROUP BY m.session_id, m.seq, m.id, m.role, m.created_at, m.content
		ORDER BY best, m.created_at DESC LIMIT `+limit, args...)
	if err != nil {
		return out, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h       model.MessageHit
			role    string
			created int64
		)
		if err := rows.Scan(&h.SessionID, &h.MessageID, &h.Seq, &role, &created, &h.Content, &h.Rank); err != nil {
			return out, mapErr(err)
		}
		h.Role, h.CreatedAt = model.Role(role), model.Time(created)
		h.Snippet = repo.Snippet(h.Content, in.Query)
		if in.SessionID != "" {
			h.SessionID = in.SessionID // inherited messages read as the fork's own
		}
		out.Data = append(out.Data, h)
	}
	return out, mapErr(rows.Err())
}
