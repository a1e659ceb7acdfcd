package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// TenantEmbedding: see repo.Embeddings.
func (s *Store) TenantEmbedding(ctx context.Context, tenant string) (*model.EmbeddingConfig, error) {
	var c *string
	err := s.pool.QueryRow(ctx, `SELECT embedding_config::text FROM tenant_embedding WHERE tenant_id = $1`, tenant).Scan(&c)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return repo.DecodeEmbeddingConfig(c)
}

// SetTenantEmbedding: see repo.Embeddings.
func (s *Store) SetTenantEmbedding(ctx context.Context, tenant string, c *model.EmbeddingConfig) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if c == nil {
			_, err := tx.Exec(ctx, `DELETE FROM tenant_embedding WHERE tenant_id = $1`, tenant)
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tenant_embedding (tenant_id, embedding_config) VALUES ($1, $2)
			ON CONFLICT (tenant_id) DO UPDATE SET embedding_config = excluded.embedding_config`, tenant, repo.EncodeEmbeddingConfig(c)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE passages SET embedding_state = 'pending', embedding_due = $1,
			embedding_attempts = 0, embedding_error = NULL
			WHERE tenant_id = $2 AND embedding IS NULL AND coalesce(embedding_state, 'failed') = 'failed'
			AND agent_id IN (SELECT id FROM agents WHERE tenant_id = $2 AND embedding_config IS NULL)`,
			int64(model.Now()), tenant)
		return err
	})
}
