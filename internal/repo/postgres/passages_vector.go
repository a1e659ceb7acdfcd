package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// SearchPassages searches an agent's archival memory by keyword, by vector
// or by both, fused by reciprocal rank, as on SQLite. By vector is pgvector's
// HNSW index when the database has the extension (searchPGVector), else
// exact cosine similarity over the agent's embeddings held in this process's
// memory, repo.VectorCache, kept coherent with other processes by the
// agent's vec_version.
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
		dims    *int64
		version int64
	)
	err := s.pool.QueryRow(ctx, `SELECT embedding_dims, vec_version FROM agents WHERE tenant_id = $1 AND id = $2`,
		tenant, agentID).Scan(&dims, &version)
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
	q := vecindex.Query{Vector: in.QueryEmbedding, K: repo.VectorDepth(in), Now: model.Now(), After: in.After, Before: in.Before}
	found, viaPG, err := s.searchPGVector(ctx, tenant, agentID, pinned, q, in.Tags)
	if err != nil {
		return nil, err
	}
	if !viaPG {
		if len(in.Tags) > 0 {
			if q.Allow, err = s.passagesTagged(ctx, tenant, agentID, in.Tags); err != nil {
				return nil, err
			}
		}
		if found, err = s.vectors.Search(ctx, tenant, agentID, version, q); err != nil {
			return nil, mapErr(err)
		}
	}
	vector, err := repo.VectorHits(found, func(ids []string) ([]model.Passage, error) {
		rows, err := s.pool.Query(ctx, `SELECT `+passageColumns+` FROM passages p WHERE p.tenant_id = $1 AND p.agent_id = $2
			AND `+passageLivePG("$3")+` AND p.id = ANY($4::text[])`, tenant, agentID, int64(model.Now()), ids)
		if err != nil {
			return nil, mapErr(err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Passage, error) { return scanPassage(r) })
		return out, mapErr(err)
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
	args := []any{tenant, agentID}
	where := []string{"p.tenant_id = $1", "p.agent_id = $2", "p.embedding IS NOT NULL"}
	for _, tag := range tags {
		args = append(args, tag)
		where = append(where, passageTaggedPG("$"+strconv.Itoa(len(args))))
	}
	rows, err := s.pool.Query(ctx, `SELECT p.id FROM passages p WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return func(id string) bool { return set[id] }, mapErr(err)
}

// loadVectors reads every embedded passage of the agent for the vector cache.
func (s *Store) loadVectors(ctx context.Context, tenant, agentID string, add func(vecindex.Row) error) error {
	rows, err := s.pool.Query(ctx, `SELECT id, created_at, coalesce(expires_at, 0), embedding FROM passages
		WHERE tenant_id = $1 AND agent_id = $2 AND embedding IS NOT NULL`, tenant, agentID)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var (
		r                vecindex.Row
		created, expires int64
		raw              []byte
	)
	for rows.Next() {
		if err := rows.Scan(&r.ID, &created, &expires, &raw); err != nil {
			return mapErr(err)
		}
		r.CreatedAt, r.ExpiresAt = model.Time(created), model.Time(expires)
		r.Vector = repo.DecodeVectorInto(r.Vector, raw)
		if err := add(r); err != nil {
			return err
		}
	}
	return mapErr(rows.Err())
}

// vecVersionPG reads the agent's vec_version inside a write, after the
// write's own change moved it.
func vecVersionPG(ctx context.Context, tx pgx.Tx, tenant, agentID string) (int64, error) {
	var v int64
	err := tx.QueryRow(ctx, `SELECT vec_version FROM agents WHERE tenant_id = $1 AND id = $2`, tenant, agentID).Scan(&v)
	return v, err
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

// VectorCacheStats says what the embeddings cache holds and how it has
// served searches since the store opened (read by the metrics at scrape time).
func (s *Store) VectorCacheStats() vecindex.Stats { return s.vectors.Stats() }
