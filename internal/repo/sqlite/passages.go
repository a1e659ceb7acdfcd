package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

const passageColumns = `p.id, p.agent_id, p.content, p.tags, p.metadata, p.created_at, p.expires_at,
	p.embedding_model, p.embedding_state, p.embedding_error`

// passageLive keeps out passages past their expires_at: they are hidden until a
// purge with expired deletes them. Its one argument is now.
const passageLive = `(p.expires_at IS NULL OR p.expires_at > ?)`

func scanPassage(sc scanner, extra ...any) (model.Passage, error) {
	var (
		p          model.Passage
		tags, meta string
	)
	if err := sc.Scan(append([]any{&p.ID, &p.AgentID, &p.Content, &tags, &meta, &p.CreatedAt, &p.ExpiresAt,
		&p.EmbeddingModel, &p.EmbeddingState, &p.EmbeddingError}, extra...)...); err != nil {
		return p, err
	}
	var err error
	if p.Tags, err = decodeList(tags); err != nil {
		return p, fmt.Errorf("passage %s tags: %w", p.ID, err)
	}
	p.Metadata = model.Object(meta)
	return p, nil
}

// CreatePassage adds a passage to an agent's archival memory; it is searchable
// as soon as this returns. Errors: KindNotFound (agent).
func (s *Store) CreatePassage(ctx context.Context, tenant, agentID string, in model.CreatePassage) (model.Passage, error) {
	p := model.Passage{ID: newID(model.PrefixPassage), AgentID: agentID, Content: in.Content, Tags: in.Tags,
		Metadata: in.Metadata, CreatedAt: model.Now(), ExpiresAt: in.ExpiresAt}
	if p.Tags == nil {
		p.Tags = []string{}
	}
	if p.Metadata == nil {
		p.Metadata = model.Object("{}")
	}
	meta := p.Metadata.String()
	if err := repo.CheckEmbedding(in, "", 0); err != nil {
		return model.Passage{}, err
	}
	var vec []byte
	if len(in.Embedding) > 0 {
		vec = repo.EncodeVector(in.Embedding)
	}
	var version int64
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointArchivalWrite); err != nil {
			return err
		}
		if err := agentExists(ctx, tx, tenant, agentID); err != nil {
			return err
		}
		if err := pinEmbedding(ctx, tx, tenant, agentID, in); err != nil {
			return err
		}
		var due *int64
		if len(in.Embedding) == 0 {
			var named bool
			if err := tx.QueryRowContext(ctx, `SELECT a.embedding_config IS NOT NULL OR EXISTS (SELECT 1 FROM tenant_embedding t WHERE t.tenant_id = a.tenant_id)
				FROM agents a WHERE a.tenant_id = ? AND a.id = ?`,
				tenant, agentID).Scan(&named); err != nil {
				return err
			}
			if named || in.ServerEmbeds {
				due = (*int64)(&p.CreatedAt)
			}
		}
		p.EmbeddingModel, p.EmbeddingState = repo.NewPassageEmbedding(in, due != nil)
		_, err := tx.Exec(`INSERT INTO passages (tenant_id, agent_id, id, content, tags, metadata, created_at, expires_at, embedding,
			embedding_model, embedding_state, embedding_due) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tenant, agentID, p.ID, p.Content, encodeList(p.Tags), meta, int64(p.CreatedAt), p.ExpiresAt, vec,
			p.EmbeddingModel, p.EmbeddingState, due)
		if err != nil || vec == nil {
			return err
		}
		version, err = vecVersion(ctx, tx, tenant, agentID)
		return err
	})
	if err == nil && vec != nil {
		s.vectors.Wrote(tenant, agentID, version-1, version, []vecindex.Row{{ID: p.ID, CreatedAt: p.CreatedAt,
			ExpiresAt: repo.ExpiresAt(p.ExpiresAt), Vector: in.Embedding}}, nil)
	}
	return p, err
}

// GetPassage returns one passage. Errors: KindNotFound.
func (s *Store) GetPassage(ctx context.Context, tenant, agentID, id string) (model.Passage, error) {
	if err := s.faults.Check(repo.PointArchivalRead); err != nil {
		return model.Passage{}, err
	}
	p, err := scanPassage(s.rdb.QueryRowContext(ctx, `SELECT `+passageColumns+` FROM passages p
		WHERE p.tenant_id = ? AND p.agent_id = ? AND p.id = ? AND `+passageLive, tenant, agentID, id, int64(model.Now())))
	if err == sql.ErrNoRows {
		return p, model.NotFound("passage", id)
	}
	return p, mapErr(err)
}

// ListPassages returns one page of an agent's passages, newest first.
func (s *Store) ListPassages(ctx context.Context, tenant, agentID string, pr repo.PageRequest) (model.Page[model.Passage], error) {
	if err := s.faults.Check(repo.PointArchivalRead); err != nil {
		return model.Page[model.Passage]{}, err
	}
	q := repo.Fingerprint("passages", agentID)
	cur, hasCur, err := repo.DecodeCursor(pr.Cursor, q)
	if err != nil {
		return model.Page[model.Passage]{}, err
	}
	cond, args := " AND "+passageLive, []any{tenant, agentID, int64(model.Now())}
	if hasCur {
		cond, args = cond+" AND (p.created_at, p.id) < (?, ?)", append(args, cur.N, cur.S)
	}
	limit := pr.Clamp()
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+passageColumns+` FROM passages p WHERE p.tenant_id = ? AND p.agent_id = ?`+
		cond+` ORDER BY p.created_at DESC, p.id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.Passage]{}, mapErr(err)
	}
	out, err := collect(rows, func(sc scanner) (model.Passage, error) { return scanPassage(sc) })
	if err != nil {
		return model.Page[model.Passage]{}, err
	}
	if len(out) == 0 {
		if err := agentExists(ctx, s.rdb, tenant, agentID); err != nil {
			return model.Page[model.Passage]{}, err
		}
	}
	return repo.NewPage(out, limit, func(last model.Passage) repo.Cursor { return repo.Cursor{Q: q, N: int64(last.CreatedAt), S: last.ID} }), nil
}

// DeletePassage removes a passage from memory and from the search index.
func (s *Store) DeletePassage(ctx context.Context, tenant, agentID, id string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointArchivalWrite); err != nil {
			return err
		}
		res, err := tx.Exec(`DELETE FROM passages WHERE tenant_id = ? AND agent_id = ? AND id = ?`, tenant, agentID, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return model.NotFound("passage", id)
		}
		return nil
	})
}

// searchPassagesKeyword ranks an agent's passages against a query with bm25. The
// tenant and agent are conditions of the same SQL statement as the MATCH, applied
// before the LIMIT: filtering a ranked page afterwards would both leak and lose results.
func (s *Store) searchPassagesKeyword(ctx context.Context, tenant, agentID string, in model.PassageSearch) ([]model.PassageHit, error) {
	if err := s.faults.Check(repo.PointArchivalRead); err != nil {
		return nil, err
	}
	if err := agentExists(ctx, s.rdb, tenant, agentID); err != nil {
		return nil, err
	}
	expr := ftsQuery(in.Query)
	if expr == "" {
		return []model.PassageHit{}, nil
	}
	where := []string{"passages_fts MATCH ?", "p.tenant_id = ?", "p.agent_id = ?", passageLive}
	args := []any{expr, tenant, agentID, int64(model.Now())}
	for _, tag := range in.Tags {
		where, args = append(where, "EXISTS (SELECT 1 FROM json_each(p.tags) WHERE value = ?)"), append(args, tag)
	}
	if in.After != nil {
		where, args = append(where, "p.created_at >= ?"), append(args, int64(*in.After))
	}
	if in.Before != nil {
		where, args = append(where, "p.created_at <= ?"), append(args, int64(*in.Before))
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+passageColumns+`, snippet(passages_fts, 0, '[', ']', '…', 16), bm25(passages_fts)
		FROM passages_fts JOIN passages p ON p.pk = passages_fts.rowid
		WHERE `+strings.Join(where, " AND ")+` ORDER BY bm25(passages_fts), p.created_at DESC LIMIT ? OFFSET ?`,
		append(args, in.Limit, in.Offset)...)
	if err != nil {
		return nil, mapErr(err)
	}
	hits, err := collect(rows, func(sc scanner) (model.PassageHit, error) {
		var h model.PassageHit
		p, err := scanPassage(sc, &h.Snippet, &h.Rank)
		h.Passage = p
		return h, err
	})
	if hits == nil && err == nil {
		hits = []model.PassageHit{}
	}
	return hits, err
}
