package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const messageEmbeddingSelectPG = `SELECT e.session_id, e.message_id, e.seq, e.agent_id, e.model, e.state, e.error,
	coalesce(octet_length(e.embedding), 0) / 4
	FROM message_embeddings e JOIN sessions s ON s.tenant_id = e.tenant_id AND s.id = e.session_id
	WHERE e.tenant_id = $1 AND e.session_id = $2 AND e.message_id = $3 AND (s.expires_at IS NULL OR s.expires_at > $4::bigint)`

func scanMessageEmbeddingPG(row pgx.Row) (model.MessageEmbedding, error) {
	var e model.MessageEmbedding
	err := row.Scan(&e.SessionID, &e.MessageID, &e.Seq, &e.AgentID, &e.EmbeddingModel, &e.EmbeddingState, &e.EmbeddingError, &e.Dimensions)
	return e, err
}

// GetMessageEmbedding: see repo.Embeddings.
func (s *Store) GetMessageEmbedding(ctx context.Context, tenant, sessionID, messageID string) (model.MessageEmbedding, error) {
	e, err := scanMessageEmbeddingPG(s.pool.QueryRow(ctx, messageEmbeddingSelectPG, tenant, sessionID, messageID, int64(model.Now())))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.GetMessage(ctx, tenant, sessionID, messageID); err != nil {
			return e, err
		}
		return e, model.NotFound("embedding of message", messageID)
	}
	return e, mapErr(err)
}

// PutMessageEmbedding: see repo.Embeddings.
func (s *Store) PutMessageEmbedding(ctx context.Context, tenant, sessionID, messageID string, in model.PutMessageEmbedding) (model.MessageEmbedding, error) {
	var out model.MessageEmbedding
	cp := model.CreatePassage{Embedding: in.Embedding, EmbeddingModel: in.EmbeddingModel}
	if err := repo.CheckEmbedding(cp, "", 0); err != nil {
		return out, err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var (
			seq   int64
			agent *string
		)
		err := tx.QueryRow(ctx, `SELECT m.seq, s.agent_id FROM messages m
			JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
			WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.id = $3 AND (s.expires_at IS NULL OR s.expires_at > $4::bigint)`,
			tenant, sessionID, messageID, int64(model.Now())).Scan(&seq, &agent)
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := getSessionTx(ctx, tx, tenant, sessionID, ""); err != nil {
				return err
			}
			return model.NotFound("message", messageID)
		}
		if err != nil {
			return err
		}
		if agent == nil {
			return repo.NoAgentForEmbedding()
		}
		if err := lockAgentForMemory(ctx, tx, tenant, *agent); err != nil {
			return err
		}
		if err := pinEmbedding(ctx, tx, tenant, *agent, cp); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO message_embeddings (tenant_id, session_id, seq, message_id, agent_id, state, model, embedding)
			VALUES ($1, $2, $3, $4, $5, 'ready', $6, $7)
			ON CONFLICT (tenant_id, session_id, seq) DO UPDATE SET message_id = excluded.message_id, agent_id = excluded.agent_id,
				state = 'ready', model = excluded.model, embedding = excluded.embedding, error = NULL, due = NULL`,
			tenant, sessionID, seq, messageID, *agent, in.EmbeddingModel, repo.EncodeVector(in.Embedding)); err != nil {
			return err
		}
		out, err = scanMessageEmbeddingPG(tx.QueryRow(ctx, messageEmbeddingSelectPG, tenant, sessionID, messageID, int64(model.Now())))
		return err
	})
	return out, mapErr(err)
}
