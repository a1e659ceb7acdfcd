package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// SearchPassages searches an agent's archival memory by keyword (bm25), by
// vector (exact cosine similarity to the query embedding, computed here over
// every live passage of the agent that has an embedding) or by both, fused by
// reciprocal rank (repo.FuseRRF).
func (s *Store) SearchPassages(ctx context.Context, tenant, agentID string, in model.PassageSearch) ([]model.PassageHit, error) {
	if in.Mode == "" || in.Mode == model.SearchKeyword {
		return s.searchPassagesKeyword(ctx, tenant, agentID, in)
	}
	if err := s.faults.Check(repo.PointArchivalRead); err != nil {
		return nil, err
	}
	var (
		pinned sql.NullString
		dims   sql.NullInt64
	)
	err := s.rdb.QueryRowContext(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = ? AND id = ?`,
		tenant, agentID).Scan(&pinned, &dims)
	if err == sql.ErrNoRows {
		return nil, model.NotFound("agent", agentID)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	if err := repo.CheckQueryEmbedding(in.QueryEmbedding, int(dims.Int64)); err != nil {
		return nil, err
	}
	cands, err := s.passageVectors(ctx, tenant, agentID, in)
	if err != nil {
		return nil, err
	}
	return repo.RankPassages(in, cands, func(kin model.PassageSearch) ([]model.PassageHit, error) {
		return s.searchPassagesKeyword(ctx, tenant, agentID, kin)
	})
}

// passageVectors reads the agent's live passages that have an embedding and
// pass the search's filters.
func (s *Store) passageVectors(ctx context.Context, tenant, agentID string, in model.PassageSearch) ([]repo.VectorCandidate, error) {
	where := []string{"p.tenant_id = ?", "p.agent_id = ?", "p.embedding IS NOT NULL", passageLive}
	args := []any{tenant, agentID, int64(model.Now())}
	for _, tag := range in.Tags {
		where, args = append(where, "EXISTS (SELECT 1 FROM json_each(p.tags) WHERE value = ?)"), append(args, tag)
	}
	if in.After != nil {
		where, args = append(where, "p.created_at >= ?"), append(args, int64(*in.After))
	}
	if in.Before != nil {
		where, args = append(where, "p.created_at <= ?"), append(args, int64(*in.Before))
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+passageColumns+`, p.embedding FROM passages p WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, func(sc scanner) (repo.VectorCandidate, error) {
		var b []byte
		p, err := scanPassage(sc, &b)
		return repo.VectorCandidate{Passage: p, Embedding: repo.DecodeVector(b)}, err
	})
}

// pinEmbedding checks a new passage's embedding against the model and length
// the agent's first embedded passage pinned, and pins them if none has. It runs
// in the writer, so two first passages cannot both pin.
func pinEmbedding(ctx context.Context, tx *sql.Tx, tenant, agentID string, in model.CreatePassage) error {
	if len(in.Embedding) == 0 {
		return nil
	}
	var (
		pinned sql.NullString
		dims   sql.NullInt64
	)
	if err := tx.QueryRowContext(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = ? AND id = ?`,
		tenant, agentID).Scan(&pinned, &dims); err != nil {
		return err
	}
	if dims.Valid {
		return repo.CheckEmbedding(in, pinned.String, int(dims.Int64))
	}
	_, err := tx.ExecContext(ctx, `UPDATE agents SET embedding_model = ?, embedding_dims = ? WHERE tenant_id = ? AND id = ?`,
		in.EmbeddingModel, len(in.Embedding), tenant, agentID)
	return err
}
