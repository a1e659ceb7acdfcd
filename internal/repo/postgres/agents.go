package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// memDB is what a memory read runs on: the pool, or a write's transaction.
type memDB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

const agentColumns = `id, name, agent_type, model, system, tool_ids, tags, metadata, created_at, updated_at,
	embedding_config, embedding_model, embedding_dims`

func scanAgent(row pgx.Row) (model.Agent, error) {
	var (
		a                 model.Agent
		tools, tags, meta string
		created, updated  int64
		embedding         *string
	)
	if err := row.Scan(&a.ID, &a.Name, &a.AgentType, &a.Model, &a.System, &tools, &tags, &meta, &created, &updated,
		&embedding, &a.EmbeddingModel, &a.EmbeddingDims); err != nil {
		return a, err
	}
	a.CreatedAt, a.UpdatedAt = model.Time(created), model.Time(updated)
	var err error
	if a.Embedding, err = repo.DecodeEmbeddingConfig(embedding); err != nil {
		return a, fmt.Errorf("agent %s: %w", a.ID, err)
	}
	if a.ToolIDs, err = memDecodeList(tools); err != nil {
		return a, fmt.Errorf("agent %s tool_ids: %w", a.ID, err)
	}
	if a.Tags, err = memDecodeList(tags); err != nil {
		return a, fmt.Errorf("agent %s tags: %w", a.ID, err)
	}
	a.Metadata = model.Object(meta)
	return a, nil
}

// memEncodeList stores a string list as a JSON array ("[]" for none), the text
// SQLite stores, so that exports of either backend agree.
func memEncodeList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l)
	return string(b)
}

func memDecodeList(s string) ([]string, error) {
	out := []string{}
	if s == "[]" {
		return out, nil
	}
	err := json.Unmarshal([]byte(s), &out)
	return out, err
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
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO agents (tenant_id, id, name, agent_type, model, system, tool_ids, tags, metadata, created_at, updated_at,
			embedding_config) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			tenant, a.ID, a.Name, a.AgentType, a.Model, a.System, memEncodeList(a.ToolIDs), memEncodeList(a.Tags), a.Metadata.String(),
			int64(a.CreatedAt), int64(a.UpdatedAt), repo.EncodeEmbeddingConfig(a.Embedding))
		if isConstraint(err) {
			return model.Errorf(model.KindConflict, "conflict", "an agent with id %q already exists", a.ID)
		}
		return err
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

// GetAgent returns one agent, or KindNotFound.
func (s *Store) GetAgent(ctx context.Context, tenant, id string) (model.Agent, error) {
	return memGetAgent(ctx, s.pool, tenant, id, "")
}

// memGetAgent reads an agent; lock is "" or a row-locking clause for a write's
// read-modify-write.
func memGetAgent(ctx context.Context, db memDB, tenant, id, lock string) (model.Agent, error) {
	a, err := scanAgent(db.QueryRow(ctx, `SELECT `+agentColumns+` FROM agents WHERE tenant_id = $1 AND id = $2`+lock, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, model.NotFound("agent", id)
	}
	return a, mapErr(err)
}

// ListAgents returns one page of the tenant's agents, newest first. Ids compare
// bytewise (COLLATE "C"), as SQLite compares them, whatever the database's
// collation, so that pages and cursors are those of SQLite.
func (s *Store) ListAgents(ctx context.Context, tenant string, f model.AgentFilter, p repo.PageRequest) (model.Page[model.Agent], error) {
	q := repo.Fingerprint("agents", f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Agent]{}, err
	}
	where, args := []string{"tenant_id = $1"}, []any{tenant}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	if f.Name != "" {
		where = append(where, "name = "+arg(f.Name))
	}
	if f.Tag != "" {
		where = append(where, "EXISTS (SELECT 1 FROM json_array_elements_text(agents.tags) t WHERE t = "+arg(f.Tag)+")")
	}
	if hasCur {
		where = append(where, "(created_at, id COLLATE \"C\") < ("+arg(cur.N)+", "+arg(cur.S)+")")
	}
	limit := p.Clamp()
	rows, err := s.pool.Query(ctx, `SELECT `+agentColumns+` FROM agents WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT `+arg(limit+1), args...)
	if err != nil {
		return model.Page[model.Agent]{}, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Agent, error) { return scanAgent(r) })
	if err != nil {
		return model.Page[model.Agent]{}, mapErr(err)
	}
	return repo.NewPage(out, limit, func(last model.Agent) repo.Cursor { return repo.Cursor{Q: q, N: int64(last.CreatedAt), S: last.ID} }), nil
}

// UpdateAgent replaces the fields present in in; metadata merges (RFC 7396). The
// row is locked for the read-modify-write, so that two processes' patches both
// land, one after the other.
func (s *Store) UpdateAgent(ctx context.Context, tenant, id string, in model.UpdateAgent) (model.Agent, error) {
	var a model.Agent
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if a, err = memGetAgent(ctx, tx, tenant, id, " FOR NO KEY UPDATE"); err != nil {
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
			if in.Metadata.Null {
				a.Metadata = model.Object("{}")
			} else if a.Metadata, err = a.Metadata.Merge(in.Metadata.Value, "metadata"); err != nil {
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
				if _, err := tx.Exec(ctx, `UPDATE passages SET embedding_state = 'pending', embedding_due = $1,
					embedding_attempts = 0, embedding_error = NULL
					WHERE tenant_id = $2 AND agent_id = $3 AND embedding IS NULL AND coalesce(embedding_state, 'failed') = 'failed'`,
					int64(model.Now()), tenant, id); err != nil {
					return err
				}
			}
		}
		normalizeAgent(&a)
		a.UpdatedAt = max(model.Now(), a.UpdatedAt)
		_, err = tx.Exec(ctx, `UPDATE agents SET name = $1, agent_type = $2, model = $3, system = $4, tool_ids = $5, tags = $6,
			metadata = $7, updated_at = $8, embedding_config = $11 WHERE tenant_id = $9 AND id = $10`,
			a.Name, a.AgentType, a.Model, a.System, memEncodeList(a.ToolIDs), memEncodeList(a.Tags), a.Metadata.String(),
			int64(a.UpdatedAt), tenant, id, repo.EncodeEmbeddingConfig(a.Embedding))
		return err
	})
	return a, err
}

// DeleteAgent removes an agent with its blocks, their history, its passages and
// every attachment from or to it, in one transaction. Sessions keep their agent_id: they are history, not memory.
// The agent's row is locked first: a block or passage write of another process
// holds it shared (lockAgentForMemory) until it commits, so it is either deleted
// here with the rest or finds the agent gone, never left behind it.
func (s *Store) DeleteAgent(ctx context.Context, tenant, id string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return model.NotFound("agent", id)
		}
		if err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM block_attachments WHERE tenant_id = $1 AND (agent_id = $2 OR owner_agent_id = $2)`,
			`DELETE FROM block_history WHERE tenant_id = $1 AND agent_id = $2`,
			`DELETE FROM blocks WHERE tenant_id = $1 AND agent_id = $2`,
			`DELETE FROM passages WHERE tenant_id = $1 AND agent_id = $2`,
			`DELETE FROM agents WHERE tenant_id = $1 AND id = $2`,
		} {
			if _, err := tx.Exec(ctx, q, tenant, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// lockAgentExclusive is lockAgentForMemory for a write that must run alone
// among the agent's memory writes (an attach, a rename): FOR UPDATE waits for
// the shared locks they hold and keeps new ones waiting until it commits.
func lockAgentExclusive(ctx context.Context, tx pgx.Tx, tenant, id string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return model.NotFound("agent", id)
	}
	return err
}

// memAgentExists is KindNotFound unless the tenant has the agent.
func memAgentExists(ctx context.Context, db memDB, tenant, id string) error {
	var one int
	err := db.QueryRow(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2`, tenant, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return model.NotFound("agent", id)
	}
	return mapErr(err)
}

// lockAgentForMemory is memAgentExists for a write of the agent's memory: the
// shared lock it takes keeps DeleteAgent waiting until the write commits.
// FOR KEY SHARE is what the foreign keys take anyway, and does not wait for an
// UpdateAgent.
func lockAgentForMemory(ctx context.Context, tx pgx.Tx, tenant, id string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR KEY SHARE`, tenant, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return model.NotFound("agent", id)
	}
	return err
}
