package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// SearchMessages searches by keyword, by meaning or both, as SQLite's does.
func (s *Store) SearchMessages(ctx context.Context, tenant string, in model.MessageSearch) (model.SearchResult[model.MessageHit], error) {
	if in.Mode == "" || in.Mode == model.SearchKeyword {
		return s.searchMessagesKeyword(ctx, tenant, in)
	}
	return repo.SearchMessagesByMeaning(ctx, tenant, in, s.faults, s.GetAgent,
		func() ([]repo.MessageCandidate, error) { return s.messageVectors(ctx, tenant, in) },
		func(kin model.MessageSearch) (model.SearchResult[model.MessageHit], error) {
			return s.searchMessagesKeyword(ctx, tenant, kin)
		})
}

// messageVectors reads the embedded messages that pass the search's filters,
// with embeddings as long as the query's.
func (s *Store) messageVectors(ctx context.Context, tenant string, in model.MessageSearch) ([]repo.MessageCandidate, error) {
	args := []any{tenant}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	where := []string{"e.tenant_id = $1", "e.state = 'ready'", "octet_length(e.embedding) = " + arg(4*len(in.QueryEmbedding)),
		"(s.expires_at IS NULL OR s.expires_at > " + arg(int64(model.Now())) + "::bigint)"}
	if in.AgentID != "" {
		where = append(where, "e.agent_id = "+arg(in.AgentID))
	}
	var segs []lineageSegment
	if in.SessionID != "" {
		var err error
		if segs, err = lineagePG(ctx, s.pool, tenant, in.SessionID); err != nil {
			return nil, mapErr(err)
		}
		owners := make([]string, 0, len(segs))
		for _, g := range segs {
			owners = append(owners, g.owner)
		}
		where = append(where, "e.session_id = ANY("+arg(owners)+"::text[])")
	}
	if len(in.Roles) > 0 {
		roles := make([]string, len(in.Roles))
		for i, r := range in.Roles {
			roles[i] = string(r)
		}
		where = append(where, "m.role = ANY("+arg(roles)+"::text[])")
	}
	if in.After != nil {
		where = append(where, "m.created_at >= "+arg(int64(*in.After))+"::bigint")
	}
	if in.Before != nil {
		where = append(where, "m.created_at <= "+arg(int64(*in.Before))+"::bigint")
	}
	rows, err := s.pool.Query(ctx, `SELECT m.session_id, m.id, m.seq, m.role, m.created_at, m.content, e.embedding
		FROM message_embeddings e
		JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
		JOIN sessions s ON s.tenant_id = e.tenant_id AND s.id = e.session_id
		WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	cands, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (repo.MessageCandidate, error) {
		var (
			c       repo.MessageCandidate
			b       []byte
			created int64
		)
		err := r.Scan(&c.Hit.SessionID, &c.Hit.MessageID, &c.Hit.Seq, &c.Hit.Role, &created, &c.Hit.Content, &b)
		c.Hit.CreatedAt, c.Embedding = model.Time(created), repo.DecodeVector(b)
		return c, err
	})
	if err != nil || segs == nil {
		return cands, mapErr(err)
	}
	kept := cands[:0]
	for _, c := range cands {
		for _, g := range segs {
			if g.owner == c.Hit.SessionID && c.Hit.Seq > g.lo && c.Hit.Seq <= g.hi {
				c.Hit.SessionID = in.SessionID
				kept = append(kept, c)
				break
			}
		}
	}
	return kept, nil
}
