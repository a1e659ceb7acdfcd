package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const messageEmbeddingSelect = `SELECT e.session_id, e.message_id, e.seq, e.agent_id, e.model, e.state, e.error,
	coalesce(length(e.embedding), 0) / 4
	FROM message_embeddings e JOIN sessions s ON s.tenant_id = e.tenant_id AND s.id = e.session_id
	WHERE e.tenant_id = ? AND e.session_id = ? AND e.message_id = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`

func scanMessageEmbedding(sc scanner) (model.MessageEmbedding, error) {
	var e model.MessageEmbedding
	err := sc.Scan(&e.SessionID, &e.MessageID, &e.Seq, &e.AgentID, &e.EmbeddingModel, &e.EmbeddingState, &e.EmbeddingError, &e.Dimensions)
	return e, err
}

// GetMessageEmbedding: see repo.Embeddings.
func (s *Store) GetMessageEmbedding(ctx context.Context, tenant, sessionID, messageID string) (model.MessageEmbedding, error) {
	e, err := scanMessageEmbedding(s.rdb.QueryRowContext(ctx, messageEmbeddingSelect, tenant, sessionID, messageID, int64(model.Now())))
	if err == sql.ErrNoRows {
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
	if err := repo.CheckEmbedding(model.CreatePassage{Embedding: in.Embedding, EmbeddingModel: in.EmbeddingModel}, "", 0); err != nil {
		return out, err
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var (
			seq   int64
			agent *string
		)
		err := tx.QueryRowContext(ctx, `SELECT m.seq, s.agent_id FROM messages m
			JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
			WHERE m.tenant_id = ? AND m.session_id = ? AND m.id = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
			tenant, sessionID, messageID, int64(model.Now())).Scan(&seq, &agent)
		if err == sql.ErrNoRows {
			if _, err := getSession(ctx, tx, tenant, sessionID); err != nil {
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
		cp := model.CreatePassage{Embedding: in.Embedding, EmbeddingModel: in.EmbeddingModel}
		if err := agentExists(ctx, tx, tenant, *agent); err != nil {
			return err
		}
		if err := pinEmbedding(ctx, tx, tenant, *agent, cp); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO message_embeddings (tenant_id, session_id, seq, message_id, agent_id, state, model, embedding)
			VALUES (?, ?, ?, ?, ?, 'ready', ?, ?)
			ON CONFLICT (tenant_id, session_id, seq) DO UPDATE SET message_id = excluded.message_id, agent_id = excluded.agent_id,
				state = 'ready', model = excluded.model, embedding = excluded.embedding, error = NULL, due = NULL`,
			tenant, sessionID, seq, messageID, *agent, in.EmbeddingModel, repo.EncodeVector(in.Embedding)); err != nil {
			return err
		}
		out, err = scanMessageEmbedding(tx.QueryRowContext(ctx, messageEmbeddingSelect, tenant, sessionID, messageID, int64(model.Now())))
		return err
	})
	return out, err
}
