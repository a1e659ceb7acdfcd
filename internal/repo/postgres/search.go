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

// What a conversation search may cost: ts_rank_cd weighs each row by itself
// (no statistics of the whole tenant, unlike SQLite's bm25), so a search ranks
// at most rankedRows of the rows that match, as the GIN index finds them,
// and says it is partial when there were more; a session's lineage of at most
// scopedRows messages is read whole through its primary key instead, so that
// searching a small session costs what the session costs whatever the tenant
// holds. See docs/scale.md, Search.
const (
	rankedRows = 2000
	scopedRows = 5000
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
	// rows is where the matching parts come from: the GIN index, at most
	// rankedRows+1 of them, or a small lineage's every part.
	rows := `SELECT ms.session_id, ms.seq, ts_rank_cd(ms.tsv, q) AS r
		FROM message_search ms, to_tsquery('english', $1) q WHERE ms.tenant_id = $2 AND ms.tsv @@ q`
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
		owners := make([]string, len(segs))
		for i, g := range segs {
			list[i], owners[i] = seg{g.owner, g.lo, min(g.hi, math.MaxInt64>>1)}, g.owner
		}
		b, _ := json.Marshal(list)
		var stored int64
		if err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(last_seq), 0) FROM sessions WHERE tenant_id = $1 AND id = ANY($2)`,
			tenant, owners).Scan(&stored); err != nil {
			return out, mapErr(err)
		}
		g := arg(string(b))
		if stored <= scopedRows {
			// Every part of the lineage, read by primary key and matched
			// here: the planner cannot trade that for the GIN index's rows of
			// the whole tenant.
			rows = `WITH seg AS MATERIALIZED (SELECT ms.session_id, ms.seq, ms.tsv
					FROM jsonb_to_recordset(` + g + `::jsonb) AS g(o text, "Lo" bigint, "Hi" bigint)
					CROSS JOIN LATERAL (SELECT session_id, seq, tsv FROM message_search
						WHERE tenant_id = $2 AND session_id = g.o AND seq > g."Lo" AND seq <= g."Hi") ms)
				SELECT seg.session_id, seg.seq, ts_rank_cd(seg.tsv, q) AS r FROM seg, to_tsquery('english', $1) q WHERE seg.tsv @@ q`
		} else {
			rows += ` AND EXISTS (SELECT 1 FROM jsonb_to_recordset(` + g + `::jsonb) AS g(o text, "Lo" bigint, "Hi" bigint)
				WHERE ms.session_id = g.o AND ms.seq > g."Lo" AND ms.seq <= g."Hi")`
		}
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
	capped := arg(rankedRows + 1)
	limit := arg(in.Limit)
	// The candidates are ranked and filtered on the messages' small columns;
	// only the hits returned have their text read.
	res, err := s.pool.Query(ctx, `WITH hits AS MATERIALIZED (SELECT * FROM (`+rows+`) x LIMIT `+capped+`),
		best AS (SELECT session_id, seq, MAX(r) AS r FROM hits GROUP BY session_id, seq),
		picked AS MATERIALIZED (SELECT b.session_id, b.seq, b.r, m.created_at
			FROM best b JOIN messages m ON m.tenant_id = $2 AND m.session_id = b.session_id AND m.seq = b.seq`+join+`
			WHERE `+strings.Join(where, " AND ")+`
			ORDER BY b.r DESC, m.created_at DESC LIMIT `+limit+`)
		SELECT n.c, m.session_id, m.id, m.seq, m.role, m.created_at, m.content, -p.r::float8
		FROM (SELECT count(*) AS c FROM hits) n
		LEFT JOIN (picked p JOIN messages m ON m.tenant_id = $2 AND m.session_id = p.session_id AND m.seq = p.seq) ON TRUE
		ORDER BY p.r DESC, p.created_at DESC`, args...)
	if err != nil {
		return out, mapErr(err)
	}
	defer res.Close()
	for res.Next() {
		var (
			n                 int64
			session, id, role *string
			content           *string
			seq, created      *int64
			rank              *float64
		)
		if err := res.Scan(&n, &session, &id, &seq, &role, &created, &content, &rank); err != nil {
			return out, mapErr(err)
		}
		out.Partial = n > rankedRows
		if session == nil {
			continue // no hit passed the filters
		}
		h := model.MessageHit{SessionID: *session, MessageID: *id, Seq: *seq, Role: model.Role(*role),
			CreatedAt: model.Time(*created), Content: *content, Rank: *rank}
		h.Snippet = repo.Snippet(h.Content, in.Query)
		if in.SessionID != "" {
			h.SessionID = in.SessionID // inherited messages read as the fork's own
		}
		out.Data = append(out.Data, h)
	}
	return out, mapErr(res.Err())
}
