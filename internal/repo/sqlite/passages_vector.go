package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// SearchPassages searches an agent's archival memory by keyword (bm25), by
// vector (exact cosine similarity to the query embedding, over the agent's
// embeddings held in memory: repo.VectorCache) or by both, fused by
// reciprocal rank (repo.FuseRRF).
func (s *Store) SearchPassages(ctx context.Context, tenant, agentID string, in model.PassageSearch) ([]model.PassageHit, error) {
	if in.Mode == "" || in.Mode == model.SearchKeyword {
		return s.searchPassagesKeyword(ctx, tenant, agentID, in)
	}
	if err := s.faults.Check(repo.PointArchivalRead); err != nil {
		return nil, err
	}
	if err := s.faults.Check(repo.PointVectorSearch); err != nil {
		return nil, err
	}
	var (
		dims    sql.NullInt64
		version int64
	)
	err := s.rdb.QueryRowContext(ctx, `SELECT embedding_dims, vec_version FROM agents WHERE tenant_id = ? AND id = ?`,
		tenant, agentID).Scan(&dims, &version)
	if err == sql.ErrNoRows {
		return nil, model.NotFound("agent", agentID)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	if err := repo.CheckQueryEmbedding(in.QueryEmbedding, int(dims.Int64)); err != nil {
		return nil, err
	}
	q := vecindex.Query{Vector: in.QueryEmbedding, K: repo.VectorDepth(in), Now: model.Now(), After: in.After, Before: in.Before}
	if len(in.Tags) > 0 {
		if q.Allow, err = s.passagesTagged(ctx, tenant, agentID, in.Tags); err != nil {
			return nil, err
		}
	}
	found, err := s.vectors.Search(ctx, tenant, agentID, version, q)
	if err != nil {
		return nil, mapErr(err)
	}
	vector, err := repo.VectorHits(found, func(ids []string) ([]model.Passage, error) {
		return s.passagesByID(ctx, tenant, agentID, ids)
	})
	if err != nil {
		return nil, err
	}
	return repo.RankPassages(in, vector, func(kin model.PassageSearch) ([]model.PassageHit, error) {
		return s.searchPassagesKeyword(ctx, tenant, agentID, kin)
	})
}

// passagesTagged is the set of the agent's embedded passages that carry
// every tag, for a vector search's filter.
func (s *Store) passagesTagged(ctx context.Context, tenant, agentID string, tags []string) (func(string) bool, error) {
	where := []string{"p.tenant_id = ?", "p.agent_id = ?", "p.embedding IS NOT NULL"}
	args := []any{tenant, agentID}
	for _, tag := range tags {
		where, args = append(where, "EXISTS (SELECT 1 FROM json_each(p.tags) WHERE value = ?)"), append(args, tag)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT p.id FROM passages p WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	ids, err := collect(rows, func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	})
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return func(id string) bool { return set[id] }, err
}

// passagesByID reads the live passages among ids.
func (s *Store) passagesByID(ctx context.Context, tenant, agentID string, ids []string) ([]model.Passage, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{tenant, agentID, int64(model.Now())}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+passageColumns+` FROM passages p WHERE p.tenant_id = ? AND p.agent_id = ? AND `+
		passageLive+` AND p.id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, func(sc scanner) (model.Passage, error) { return scanPassage(sc) })
}

// loadVectors reads every embedded passage of the agent for the vector cache.
func (s *Store) loadVectors(ctx context.Context, tenant, agentID string, add func(vecindex.Row) error) error {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, created_at, coalesce(expires_at, 0), embedding FROM passages
		WHERE tenant_id = ? AND agent_id = ? AND embedding IS NOT NULL`, tenant, agentID)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var (
		r   vecindex.Row
		raw []byte
	)
	for rows.Next() {
		if err := rows.Scan(&r.ID, &r.CreatedAt, &r.ExpiresAt, &raw); err != nil {
			return mapErr(err)
		}
		r.Vector = repo.DecodeVectorInto(r.Vector, raw)
		if err := add(r); err != nil {
			return err
		}
	}
	return mapErr(rows.Err())
}

// vecVersion reads the agent's vec_version inside a write, after the write's
// own change moved it.
func vecVersion(ctx context.Context, tx *sql.Tx, tenant, agentID string) (int64, error) {
	var v int64
	err := tx.QueryRowContext(ctx, `SELECT vec_version FROM agents WHERE tenant_id = ? AND id = ?`, tenant, agentID).Scan(&v)
	return v, err
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

// VectorCacheStats says what the embeddings cache holds and how it has
// served searches since the store opened (read by the metrics at scrape time).
func (s *Store) VectorCacheStats() vecindex.Stats { return s.vectors.Stats() }
