package sqlite

import (
	"context"
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
		func() ([]repo.MessageCandidate, error) { return s.messageVectors(ctx, tenant, in) },
		func(kin model.MessageSearch) (model.SearchResult[model.MessageHit], error) {
			return s.searchMessagesKeyword(ctx, tenant, kin)
		})
}

// messageVectors reads the embedded messages that pass the search's filters,
// with embeddings as long as the query's.
func (s *Store) messageVectors(ctx context.Context, tenant string, in model.MessageSearch) ([]repo.MessageCandidate, error) {
	where := []string{"e.tenant_id = ?", "e.state = 'ready'", "length(e.embedding) = ?", "(s.expires_at IS NULL OR s.expires_at > ?)"}
	args := []any{tenant, 4 * len(in.QueryEmbedding), int64(model.Now())}
	if in.AgentID != "" {
		where, args = append(where, "e.agent_id = ?"), append(args, in.AgentID)
	}
	var segs []segment
	if in.SessionID != "" {
		var err error
		if segs, err = s.readLineage(ctx, tenant, in.SessionID); err != nil {
			return nil, mapErr(err)
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
	rows, err := s.rdb.QueryContext(ctx, `SELECT m.session_id, m.id, m.seq, m.role, m.created_at, m.content, e.embedding
		FROM message_embeddings e
		JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
		JOIN sessions s ON s.tenant_id = e.tenant_id AND s.id = e.session_id
		WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	cands, err := collect(rows, func(sc scanner) (repo.MessageCandidate, error) {
		var (
			c repo.MessageCandidate
			b []byte
		)
		err := sc.Scan(&c.Hit.SessionID, &c.Hit.MessageID, &c.Hit.Seq, &c.Hit.Role, &c.Hit.CreatedAt, &c.Hit.Content, &b)
		c.Embedding = repo.DecodeVector(b)
		return c, err
	})
	if err != nil || segs == nil {
		return cands, err
	}
	// A fork reads its ancestors' messages only up to where it forked.
	kept := cands[:0]
	for _, c := range cands {
		for _, g := range segs {
			if g.owner == c.Hit.SessionID && g.contains(c.Hit.Seq) {
				c.Hit.SessionID = in.SessionID
				kept = append(kept, c)
				break
			}
		}
	}
	return kept, nil
}
