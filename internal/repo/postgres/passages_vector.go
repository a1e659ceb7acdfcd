package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// SearchPassages searches an agent's archival memory by keyword, by vector
// (exact cosine similarity to the query embedding, computed here over every
// live passage of the agent that has an embedding) or by both, fused by
// reciprocal rank (repo.FuseRRF), as on SQLite.
func (s *Store) SearchPassages(ctx context.Context, tenant, agentID string, in model.PassageSearch) ([]model.PassageHit, error) {
	if in.Mode == "" || in.Mode == model.SearchKeyword {
		return s.searchPassagesKeyword(ctx, tenant, agentID, in)
	}
	if err := s.faults.Check(repo.PointArchivalRead); err != nil {
		return nil, err
	}
	var dims *int64
	err := s.pool.QueryRow(ctx, `SELECT embedding_dims FROM agents WHERE tenant_id = $1 AND id = $2`, tenant, agentID).Scan(&dims)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, model.NotFound("agent", agentID)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	pinned := 0
	if dims != nil {
		pinned = int(*dims)
	}
	if err := repo.CheckQueryEmbedding(in.QueryEmbedding, pinned); err != nil {
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
	args := []any{tenant, agentID}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	where := []string{"p.tenant_id = $1", "p.agent_id = $2", "p.embedding IS NOT NULL", passageLivePG(arg(int64(model.Now())))}
	for _, tag := range in.Tags {
		where = append(where, "EXISTS (SELECT 1 FROM json_array_elements_text(p.tags) t WHERE t = "+arg(tag)+"::text)")
	}
	if in.After != nil {
		where = append(where, "p.created_at >= "+arg(int64(*in.After))+"::bigint")
	}
	if in.Before != nil {
		where = append(where, "p.created_at <= "+arg(int64(*in.Before))+"::bigint")
	}
	rows, err := s.pool.Query(ctx, `SELECT `+passageColumns+`, p.embedding FROM passages p WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (repo.VectorCandidate, error) {
		var b []byte
		p, err := scanPassage(r, &b)
		return repo.VectorCandidate{Passage: p, Embedding: repo.DecodeVector(b)}, err
	})
	return out, mapErr(err)
}

// pinEmbedding checks a new passage's embedding against the model and length
// the agent's first embedded passage pinned, and pins them if none has. The
// agent row is locked for the check, so two first passages cannot both pin.
func pinEmbedding(ctx context.Context, tx pgx.Tx, tenant, agentID string, in model.CreatePassage) error {
	if len(in.Embedding) == 0 {
		return nil
	}
	var (
		pinned *string
		dims   *int64
	)
	if err := tx.QueryRow(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE`,
		tenant, agentID).Scan(&pinned, &dims); err != nil {
		return err
	}
	if dims != nil && pinned != nil {
		return repo.CheckEmbedding(in, *pinned, int(*dims))
	}
	_, err := tx.Exec(ctx, `UPDATE agents SET embedding_model = $3, embedding_dims = $4 WHERE tenant_id = $1 AND id = $2`,
		tenant, agentID, in.EmbeddingModel, len(in.Embedding))
	return err
}
