package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// SearchMessages searches by keyword, by meaning or both, as SQLite's does.
func (s *Store) SearchMessages(ctx context.Context, tenant string, in model.MessageSearch) (model.SearchResult[model.MessageHit], error) {
	if in.Mode == "" || in.Mode == model.SearchKeyword {
		return s.searchMessagesKeyword(ctx, tenant, in)
	}
	return repo.SearchMessagesByMeaning(ctx, tenant, in, s.faults, s.GetAgent,
		func(visit func(repo.MessageCandidate, []float32)) error {
			return s.messageVectors(ctx, tenant, in, visit)
		},
		func(cands []repo.MessageCandidate) ([]string, error) { return s.messageContents(ctx, tenant, cands) },
		func(kin model.MessageSearch) (model.SearchResult[model.MessageHit], error) {
			return s.searchMessagesKeyword(ctx, tenant, kin)
		})
}

// messageVectors streams the embedded messages that pass the search's
// filters, with embeddings as long as the query's, to visit.
func (s *Store) messageVectors(ctx context.Context, tenant string, in model.MessageSearch, visit func(repo.MessageCandidate, []float32)) error {
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
			return mapErr(err)
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
	rows, err := s.pool.Query(ctx, `SELECT m.session_id, m.id, m.seq, m.role, m.created_at, e.embedding
		FROM message_embeddings e
		JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
		JOIN sessions s ON s.tenant_id = e.tenant_id AND s.id = e.session_id
		WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var (
		c       repo.MessageCandidate
		created int64
		vec     []float32
	)
	for rows.Next() {
		// The embedding is the row's own bytes, valid until Next: decoded
		// into one reused slice, never copied whole.
		raw := rows.RawValues()
		if err := rows.Scan(&c.Owner, &c.Hit.MessageID, &c.Hit.Seq, &c.Hit.Role, &created, nil); err != nil {
			return mapErr(err)
		}
		c.Hit.SessionID, c.Hit.CreatedAt = c.Owner, model.Time(created)
		if segs != nil {
			// A fork reads its ancestors' messages only up to where it forked.
			read := false
			for _, g := range segs {
				if g.owner == c.Owner && c.Hit.Seq > g.lo && c.Hit.Seq <= g.hi {
					read = true
					break
				}
			}
			if !read {
				continue
			}
			c.Hit.SessionID = in.SessionID
		}
		vec = repo.DecodeVectorInto(vec, raw[5])
		visit(c, vec)
	}
	return mapErr(rows.Err())
}

// messageContents reads the candidates' message contents, in order.
func (s *Store) messageContents(ctx context.Context, tenant string, cands []repo.MessageCandidate) ([]string, error) {
	out := make([]string, len(cands))
	if len(cands) == 0 {
		return out, nil
	}
	sessions, seqs := make([]string, len(cands)), make([]int64, len(cands))
	at := make(map[string]int, len(cands))
	for i, c := range cands {
		sessions[i], seqs[i] = c.Owner, c.Hit.Seq
		at[c.Owner+"\x00"+c.Hit.MessageID] = i
	}
	rows, err := s.pool.Query(ctx, `SELECT m.session_id, m.id, m.content FROM messages m
		JOIN unnest($2::text[], $3::bigint[]) AS k(session_id, seq) ON m.session_id = k.session_id AND m.seq = k.seq
		WHERE m.tenant_id = $1`, tenant, sessions, seqs)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var session, id, content string
		if err := rows.Scan(&session, &id, &content); err != nil {
			return nil, mapErr(err)
		}
		if i, ok := at[session+"\x00"+id]; ok {
			out[i] = content
		}
	}
	return out, mapErr(rows.Err())
}
