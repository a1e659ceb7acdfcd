package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// TenantEmbedding: see repo.Embeddings.
func (s *Store) TenantEmbedding(ctx context.Context, tenant string) (*model.EmbeddingConfig, error) {
	var c *string
	err := s.rdb.QueryRowContext(ctx, `SELECT embedding_config FROM tenant_embedding WHERE tenant_id = ?`, tenant).Scan(&c)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return repo.DecodeEmbeddingConfig(c)
}

// SetTenantEmbedding: see repo.Embeddings.
func (s *Store) SetTenantEmbedding(ctx context.Context, tenant string, c *model.EmbeddingConfig) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if c == nil {
			_, err := tx.ExecContext(ctx, `DELETE FROM tenant_embedding WHERE tenant_id = ?`, tenant)
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tenant_embedding (tenant_id, embedding_config) VALUES (?, ?)
			ON CONFLICT (tenant_id) DO UPDATE SET embedding_config = excluded.embedding_config`, tenant, repo.EncodeEmbeddingConfig(c)); err != nil {
			return err
		}
		// The passages stored before, of agents that name no endpoint, are
		// embedded too; those that failed get another round.
		_, err := tx.ExecContext(ctx, `UPDATE passages SET embedding_state = 'pending', embedding_due = ?,
			embedding_attempts = 0, embedding_error = NULL
			WHERE tenant_id = ? AND embedding IS NULL AND coalesce(embedding_state, 'failed') = 'failed'
			AND agent_id IN (SELECT id FROM agents WHERE tenant_id = ? AND embedding_config IS NULL)`,
			int64(model.Now()), tenant, tenant)
		return err
	})
}
