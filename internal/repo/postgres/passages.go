package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

const passageColumns = `p.id, p.agent_id, p.content, p.tags, p.metadata, p.created_at, p.expires_at,
	p.embedding_model, p.embedding_state, p.embedding_error`

// passageLivePG keeps out passages past their expires_at (compared with the
// placeholder n, now): they are hidden until a purge with expired deletes them.
func passageLivePG(n string) string {
	return `(p.expires_at IS NULL OR p.expires_at > ` + n + `::bigint)`
}

// passageTaggedPG is the condition that the passage carries the tag in
// parameter n.
func passageTaggedPG(n string) string {
	return `EXISTS (SELECT 1 FROM json_array_elements_text(p.tags) t WHERE t = ` + n + `::text)`
}

// scanPassage reads passageColumns, then extra.
func scanPassage(row pgx.Row, extra ...any) (model.Passage, error) {
	var (
		p          model.Passage
		tags, meta string
		created    int64
		expires    *int64
	)
	if err := row.Scan(append([]any{&p.ID, &p.AgentID, &p.Content, &tags, &meta, &created, &expires,
		&p.EmbeddingModel, &p.EmbeddingState, &p.EmbeddingError}, extra...)...); err != nil {
		return p, err
	}
	p.CreatedAt = model.Time(created)
	if expires != nil {
		t := model.Time(*expires)
		p.ExpiresAt = &t
	}
	var err error
	if p.Tags, err = memDecodeList(tags); err != nil {
		return p, fmt.Errorf("passage %s tags: %w", p.ID, err)
	}
	p.Metadata = model.Object(meta)
	return p, nil
}

// CreatePassage adds a passage to an agent's archival memory; it is searchable
// as soon as this returns (tsv is a generated column). Errors: KindNotFound (agent).
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
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointArchivalWrite); err != nil {
			return err
		}
		if err := lockAgentForMemory(ctx, tx, tenant, agentID); err != nil {
			return err
		}
		if err := pinEmbedding(ctx, tx, tenant, agentID, in); err != nil {
			return err
		}
		var due *int64
		if len(in.Embedding) == 0 {
			var named bool
			if err := tx.QueryRow(ctx, `SELECT a.embedding_config IS NOT NULL OR EXISTS (SELECT 1 FROM tenant_embedding t WHERE t.tenant_id = a.tenant_id)
				FROM agents a WHERE a.tenant_id = $1 AND a.id = $2`,
				tenant, agentID).Scan(&named); err != nil {
				return err
			}
			if named || in.ServerEmbeds {
				due = (*int64)(&p.CreatedAt)
			}
		}
		p.EmbeddingModel, p.EmbeddingState = repo.NewPassageEmbedding(in, due != nil)
		_, err := tx.Exec(ctx, `INSERT INTO passages (tenant_id, agent_id, id, content, tags, metadata, created_at, expires_at, embedding,
			embedding_model, embedding_state, embedding_due) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			tenant, agentID, p.ID, p.Content, memEncodeList(p.Tags), meta, int64(p.CreatedAt), timePtrPG(p.ExpiresAt), vec,
			p.EmbeddingModel, p.EmbeddingState, due)
		if err != nil || vec == nil {
			return err
		}
		version, err = vecVersionPG(ctx, tx, tenant, agentID)
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
	p, err := scanPassage(s.pool.QueryRow(ctx, `SELECT `+passageColumns+` FROM passages p
		WHERE p.tenant_id = $1 AND p.agent_id = $2 AND p.id = $3 AND `+passageLivePG("$4"), tenant, agentID, id, int64(model.Now())))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, model.NotFound("passage", id)
	}
	return p, mapErr(err)
}

// ListPassages returns one page of an agent's passages, newest first; ids
// compare bytewise (COLLATE "C"), as on SQLite.
func (s *Store) ListPassages(ctx context.Context, tenant, agentID string, pr repo.PageRequest) (model.Page[model.Passage], error) {
	if err := s.faults.Check(repo.PointArchivalRead); err != nil {
		return model.Page[model.Passage]{}, err
	}
	q := repo.Fingerprint("passages", agentID)
	cur, hasCur, err := repo.DecodeCursor(pr.Cursor, q)
	if err != nil {
		return model.Page[model.Passage]{}, err
	}
	limit := pr.Clamp()
	cond, args := " AND "+passageLivePG("$4"), []any{tenant, agentID, limit + 1, int64(model.Now())}
	if hasCur {
		cond, args = cond+` AND (p.created_at, p.id COLLATE "C") < ($5, $6)`, append(args, cur.N, cur.S)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+passageColumns+` FROM passages p WHERE p.tenant_id = $1 AND p.agent_id = $2`+
		cond+` ORDER BY p.created_at DESC, p.id COLLATE "C" DESC LIMIT $3`, args...)
	if err != nil {
		return model.Page[model.Passage]{}, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Passage, error) { return scanPassage(r) })
	if err != nil {
		return model.Page[model.Passage]{}, mapErr(err)
	}
	if len(out) == 0 {
		if err := memAgentExists(ctx, s.pool, tenant, agentID); err != nil {
			return model.Page[model.Passage]{}, err
		}
	}
	return repo.NewPage(out, limit, func(last model.Passage) repo.Cursor { return repo.Cursor{Q: q, N: int64(last.CreatedAt), S: last.ID} }), nil
}

// DeletePassage removes a passage from memory and from the search index.
func (s *Store) DeletePassage(ctx context.Context, tenant, agentID, id string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointArchivalWrite); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM passages WHERE tenant_id = $1 AND agent_id = $2 AND id = $3`, tenant, agentID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return model.NotFound("passage", id)
		}
		return nil
	})
}
