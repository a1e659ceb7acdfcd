package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const agentColumns = `id, name, agent_type, model, system, tool_ids, tags, metadata, created_at, updated_at,
	embedding_config, embedding_model, embedding_dims`

func scanAgent(sc scanner) (model.Agent, error) {
	var (
		a                 model.Agent
		tools, tags, meta string
		embedding         *string
	)
	if err := sc.Scan(&a.ID, &a.Name, &a.AgentType, &a.Model, &a.System, &tools, &tags, &meta, &a.CreatedAt, &a.UpdatedAt,
		&embedding, &a.EmbeddingModel, &a.EmbeddingDims); err != nil {
		return a, err
	}
	var err error
	if a.Embedding, err = repo.DecodeEmbeddingConfig(embedding); err != nil {
		return a, fmt.Errorf("agent %s: %w", a.ID, err)
	}
	if a.ToolIDs, err = decodeList(tools); err != nil {
		return a, fmt.Errorf("agent %s tool_ids: %w", a.ID, err)
	}
	if a.Tags, err = decodeList(tags); err != nil {
		return a, fmt.Errorf("agent %s tags: %w", a.ID, err)
	}
	a.Metadata = model.Object(meta)
	return a, nil
}

// CreateAgent stores a new agent. A client-chosen id the tenant already uses is
// KindConflict.
func (s *Store) CreateAgent(ctx context.Context, tenant string, in model.CreateAgent) (model.Agent, error) {
	now := model.Now()
	a := model.Agent{ID: in.ID, Name: in.Name, AgentType: in.AgentType, Model: in.Model, System: in.System,
		ToolIDs: in.ToolIDs, Tags: in.Tags, Metadata: in.Metadata, Embedding: in.Embedding, CreatedAt: now, UpdatedAt: now}
	if a.ID == "" {
		a.ID = newID(model.PrefixAgent)
	}
	if a.AgentType == "" {
		a.AgentType = model.DefaultAgentType
	}
	normalizeAgent(&a)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return insertAgent(tx, tenant, a)
	})
	return a, err
}

func normalizeAgent(a *model.Agent) {
	if a.ToolIDs == nil {
		a.ToolIDs = []string{}
	}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	if a.Metadata == nil {
		a.Metadata = model.Object("{}")
	}
}

func insertAgent(tx *sql.Tx, tenant string, a model.Agent) error {
	_, err := tx.Exec(`INSERT INTO agents (tenant_id, id, name, agent_type, model, system, tool_ids, tags, metadata, created_at, updated_at,
		embedding_config) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenant, a.ID, a.Name, a.AgentType, a.Model, a.System, encodeList(a.ToolIDs), encodeList(a.Tags), a.Metadata.String(),
		int64(a.CreatedAt), int64(a.UpdatedAt), repo.EncodeEmbeddingConfig(a.Embedding))
	if isConstraint(err) {
		return model.Errorf(model.KindConflict, "conflict", "an agent with id %q already exists", a.ID)
	}
	return err
}

// GetAgent returns one agent, or KindNotFound.
func (s *Store) GetAgent(ctx context.Context, tenant, id string) (model.Agent, error) {
	return getAgent(ctx, s.rdb, tenant, id)
}

func getAgent(ctx context.Context, q querier, tenant, id string) (model.Agent, error) {
	a, err := scanAgent(q.QueryRowContext(ctx, `SELECT `+agentColumns+` FROM agents WHERE tenant_id = ? AND id = ?`, tenant, id))
	if err == sql.ErrNoRows {
		return a, model.NotFound("agent", id)
	}
	return a, mapErr(err)
}

// ListAgents returns one page of the tenant's agents, newest first.
func (s *Store) ListAgents(ctx context.Context, tenant string, f model.AgentFilter, p repo.PageRequest) (model.Page[model.Agent], error) {
	q := repo.Fingerprint("agents", f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Agent]{}, err
	}
	where, args := []string{"tenant_id = ?"}, []any{tenant}
	if f.Name != "" {
		where, args = append(where, "name = ?"), append(args, f.Name)
	}
	if f.Tag != "" {
		where, args = append(where, "EXISTS (SELECT 1 FROM json_each(agents.tags) WHERE value = ?)"), append(args, f.Tag)
	}
	if hasCur {
		where, args = append(where, "(created_at, id) < (?, ?)"), append(args, cur.N, cur.S)
	}
	limit := p.Clamp()
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+agentColumns+` FROM agents WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.Agent]{}, mapErr(err)
	}
	out, err := collect(rows, scanAgent)
	if err != nil {
		return model.Page[model.Agent]{}, err
	}
	return repo.NewPage(out, limit, func(last model.Agent) repo.Cursor { return repo.Cursor{Q: q, N: int64(last.CreatedAt), S: last.ID} }), nil
}

// collect scans every row and closes rows.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	return collectN(rows, 0, scan)
}

// collectN is collect with room for n rows from the start, for a query whose
// LIMIT says how many it will return.
func collectN[T any](rows *sql.Rows, n int, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	out := make([]T, 0, n)
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, mapErr(err)
		}
		out = append(out, v)
	}
	return out, mapErr(rows.Err())
}

// UpdateAgent replaces the fields present in in; metadata merges (RFC 7396).
func (s *Store) UpdateAgent(ctx context.Context, tenant, id string, in model.UpdateAgent) (model.Agent, error) {
	var a model.Agent
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if a, err = getAgent(ctx, tx, tenant, id); err != nil {
			return err
		}
		if in.Name.Set {
			a.Name = in.Name.Value
		}
		if in.AgentType.Set {
			a.AgentType = in.AgentType.Value
		}
		if in.Model.Set {
			a.Model = in.Model.Ptr()
		}
		if in.System.Set {
			a.System = in.System.Ptr()
		}
		if in.ToolIDs.Set {
			a.ToolIDs = in.ToolIDs.Value
		}
		if in.Tags.Set {
			a.Tags = in.Tags.Value
		}
		if in.Metadata.Set {
			if a.Metadata, err = repo.MergeMetadata(a.Metadata, in.Metadata); err != nil {
				return err
			}
		}
		if in.Embedding.Set {
			a.Embedding = in.Embedding.Ptr()
			if err := repo.CheckAgentEmbedding(a, a.Embedding); err != nil {
				return err
			}
			// An endpoint embeds the passages stored before it too, and
			// gives those that failed another round.
			if a.Embedding != nil {
				if _, err := tx.ExecContext(ctx, `UPDATE passages SET embedding_state = 'pending', embedding_due = ?,
					embedding_attempts = 0, embedding_error = NULL
					WHERE tenant_id = ? AND agent_id = ? AND embedding IS NULL AND coalesce(embedding_state, 'failed') = 'failed'`,
					int64(model.Now()), tenant, id); err != nil {
					return err
				}
			}
		}
		normalizeAgent(&a)
		a.UpdatedAt = max(model.Now(), a.UpdatedAt)
		_, err = tx.Exec(`UPDATE agents SET name = ?, agent_type = ?, model = ?, system = ?, tool_ids = ?, tags = ?,
			metadata = ?, updated_at = ?, embedding_config = ? WHERE tenant_id = ? AND id = ?`,
			a.Name, a.AgentType, a.Model, a.System, encodeList(a.ToolIDs), encodeList(a.Tags), a.Metadata.String(), int64(a.UpdatedAt),
			repo.EncodeEmbeddingConfig(a.Embedding), tenant, id)
		return err
	})
	return a, err
}

// DeleteAgent removes an agent with its blocks, their history, its passages and
// every attachment from or to it, in one transaction. Sessions keep their agent_id: they are history, not memory.
func (s *Store) DeleteAgent(ctx context.Context, tenant, id string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM block_attachments WHERE tenant_id = ?1 AND (agent_id = ?2 OR owner_agent_id = ?2)`,
			`DELETE FROM block_history WHERE tenant_id = ? AND agent_id = ?`,
			`DELETE FROM blocks WHERE tenant_id = ? AND agent_id = ?`,
			`DELETE FROM passages WHERE tenant_id = ? AND agent_id = ?`,
		} {
			if _, err := tx.Exec(q, tenant, id); err != nil {
				return err
			}
		}
		res, err := tx.Exec(`DELETE FROM agents WHERE tenant_id = ? AND id = ?`, tenant, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return model.NotFound("agent", id)
		}
		return nil
	})
}

// agentExists is KindNotFound unless the tenant has the agent.
func agentExists(ctx context.Context, q querier, tenant, id string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM agents WHERE tenant_id = ? AND id = ?`, tenant, id).Scan(&one)
	if err == sql.ErrNoRows {
		return model.NotFound("agent", id)
	}
	return mapErr(err)
}
