package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// SearchMessages searches a tenant's (or one agent's) messages by keyword
// (bm25), by meaning (cosine similarity of the message embeddings the
// server made, exact, in Go) or both, fused by reciprocal rank.
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
// filters, with embeddings as long as the query's, to visit; the embedding
// is decoded from the driver's own buffer into one reused slice.
func (s *Store) messageVectors(ctx context.Context, tenant string, in model.MessageSearch, visit func(repo.MessageCandidate, []float32)) error {
	where := []string{"e.tenant_id = ?", "e.state = 'ready'", "length(e.embedding) = ?", "(s.expires_at IS NULL OR s.expires_at > ?)"}
	args := []any{tenant, 4 * len(in.QueryEmbedding), int64(model.Now())}
	if in.AgentID != "" {
		where, args = append(where, "e.agent_id = ?"), append(args, in.AgentID)
	}
	var segs []segment
	if in.SessionID != "" {
		var err error
		if segs, err = s.readLineage(ctx, tenant, in.SessionID); err != nil {
			return mapErr(err)
		}
		owners := make([]string, 0, len(segs))
		for _, g := range segs {
			owners, args = append(owners, "?"), append(args, g.owner)
		}
		where = append(where, "e.session_id IN ("+strings.Join(owners, ", ")+")")
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
	rows, err := s.rdb.QueryContext(ctx, `SELECT m.session_id, m.id, m.seq, m.role, m.created_at, e.embedding
		FROM message_embeddings e
		JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
		JOIN sessions s ON s.tenant_id = e.tenant_id AND s.id = e.session_id
		WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var (
		c   repo.MessageCandidate
		raw sql.RawBytes
		vec []float32
	)
	for rows.Next() {
		if err := rows.Scan(&c.Owner, &c.Hit.MessageID, &c.Hit.Seq, &c.Hit.Role, &c.Hit.CreatedAt, &raw); err != nil {
			return mapErr(err)
		}
		c.Hit.SessionID = c.Owner
		if segs != nil {
			// A fork reads its ancestors' messages only up to where it forked.
			read := false
			for _, g := range segs {
				if g.owner == c.Owner && g.contains(c.Hit.Seq) {
					read = true
					break
				}
			}
			if !read {
				continue
			}
			c.Hit.SessionID = in.SessionID
		}
		vec = repo.DecodeVectorInto(vec, raw)
		visit(c, vec)
	}
	return mapErr(rows.Err())
}

// messageContents reads the candidates' message contents, in order, a few
// hundred rows per query.
func (s *Store) messageContents(ctx context.Context, tenant string, cands []repo.MessageCandidate) ([]string, error) {
	out := make([]string, len(cands))
	for lo := 0; lo < len(cands); lo += 400 {
		part := cands[lo:min(lo+400, len(cands))]
		at := make(map[string]int, len(part))
		where := make([]string, len(part))
		args := []any{tenant}
		for i, c := range part {
			at[c.Owner+"\x00"+c.Hit.MessageID] = lo + i
			where[i] = "(session_id = ? AND seq = ?)"
			args = append(args, c.Owner, c.Hit.Seq)
		}
		rows, err := s.rdb.QueryContext(ctx, `SELECT session_id, id, content FROM messages WHERE tenant_id = ? AND (`+
			strings.Join(where, " OR ")+`)`, args...)
		if err != nil {
			return nil, mapErr(err)
		}
		for rows.Next() {
			var session, id, content string
			if err := rows.Scan(&session, &id, &content); err != nil {
				rows.Close()
				return nil, mapErr(err)
			}
			if i, ok := at[session+"\x00"+id]; ok {
				out[i] = content
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, mapErr(err)
		}
	}
	return out, nil
}
