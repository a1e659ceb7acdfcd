package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const blockColumns = `id, agent_id, label, value, limit_chars, description, read_only, version, updated_at`

func scanBlock(sc scanner) (model.Block, error) {
	var b model.Block
	err := sc.Scan(&b.ID, &b.AgentID, &b.Label, &b.Value, &b.Limit, &b.Description, &b.ReadOnly, &b.Version, &b.UpdatedAt)
	return b, err
}

// ListBlocks returns an agent's blocks, its own and those attached to it, in
// label order. Errors: KindNotFound.
func (s *Store) ListBlocks(ctx context.Context, tenant, agentID string) ([]model.Block, error) {
	if err := s.faults.Check(repo.PointBlockRead); err != nil {
		return nil, err
	}
	r := s.blockReader(ctx)
	rows, err := r.QueryContext(ctx, agentBlocksQuery, tenant, agentID)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collect(rows, scanAgentBlock)
	if err != nil {
		return nil, err
	}
	if err := fillShared(ctx, r, tenant, out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if err := agentExists(ctx, r, tenant, agentID); err != nil {
			return nil, err
		}
		out = []model.Block{}
	}
	return out, nil
}

// GetBlock returns one block, as the agent sees it. Errors: KindNotFound
// (agent or block).
func (s *Store) GetBlock(ctx context.Context, tenant, agentID, label string) (model.Block, error) {
	if err := s.faults.Check(repo.PointBlockRead); err != nil {
		return model.Block{}, err
	}
	return getBlock(ctx, s.blockReader(ctx), tenant, agentID, label)
}

// getBlock reads agentID's block label as the agent sees it.
func getBlock(ctx context.Context, q querier, tenant, agentID, label string) (model.Block, error) {
	b, err := findBlock(ctx, q, tenant, agentID, label)
	if err != nil {
		return b, err
	}
	return b, present(ctx, q, tenant, &b, agentID, label)
}

// findBlock reads agentID's block label where it is kept, its own or the one
// an attachment names, in one query (blockAtQuery): b's AgentID and Label are
// its owner's.
func findBlock(ctx context.Context, q querier, tenant, agentID, label string) (model.Block, error) {
	b, err := scanBlock(q.QueryRowContext(ctx, blockAtQuery, tenant, agentID, label))
	if err == sql.ErrNoRows {
		if err := agentExists(ctx, q, tenant, agentID); err != nil {
			return b, err
		}
		return b, model.NotFound("block", label)
	}
	return b, mapErr(err)
}

// PutBlock creates or replaces a block. With ifMatch set, the block must exist at
// that version (KindPrecondition otherwise). created says which it was.
func (s *Store) PutBlock(ctx context.Context, tenant, agentID, label string, in model.PutBlock, ifMatch *int64) (b model.Block, created bool, err error) {
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointBlockWrite); err != nil {
			return err
		}
		cur, err := findBlock(ctx, tx, tenant, agentID, label)
		exists := err == nil
		if err != nil && !model.IsNotFound(err, "block") {
			return err
		}
		if ifMatch != nil && (!exists || (*ifMatch != repo.AnyVersion && cur.Version != *ifMatch)) {
			return model.PreconditionFailed(label, cur.Version)
		}
		b = model.Block{AgentID: agentID, Label: label, Value: in.Value, Limit: in.Limit,
			Description: in.Description, ReadOnly: in.ReadOnly, ID: cur.ID, Version: cur.Version}
		if exists {
			b.AgentID, b.Label = cur.AgentID, cur.Label
		}
		if b.Limit == 0 {
			b.Limit = model.DefaultBlockLimit
		}
		created = !exists
		if err := saveBlock(tx, tenant, &b); err != nil {
			return err
		}
		return present(ctx, tx, tenant, &b, agentID, label)
	})
	return b, created, err
}

// AppendBlock appends content on a new line, creating a missing block
// (append-or-create, inside the writer, so concurrent appends never make two
// blocks or lose text). Errors: KindNotFound (agent), limit_exceeded, read_only
// (tools).
func (s *Store) AppendBlock(ctx context.Context, tenant, agentID, label, content string, by repo.BlockEdit) (model.Block, error) {
	return s.editBlock(ctx, tenant, agentID, label, by, true, func(b *model.Block) error {
		b.Value = model.AppendValue(b.Value, content)
		return nil
	})
}

// ReplaceBlock replaces every occurrence of old with new. Errors: KindNotFound,
// old_not_found, limit_exceeded, read_only (tools).
func (s *Store) ReplaceBlock(ctx context.Context, tenant, agentID, label, old, new string, by repo.BlockEdit) (model.Block, error) {
	return s.editBlock(ctx, tenant, agentID, label, by, false, func(b *model.Block) error {
		v, err := model.ReplaceValue(label, b.Value, old, new)
		b.Value = v
		return err
	})
}

// EditBlock applies edit to a block inside the writer; with create, a missing
// block reaches edit new (Version 0). Errors: KindNotFound, limit_exceeded,
// read_only (tools), and edit's own.
func (s *Store) EditBlock(ctx context.Context, tenant, agentID, label string, by repo.BlockEdit, create bool,
	edit func(*model.Block) error) (model.Block, error) {
	return s.editBlock(ctx, tenant, agentID, label, by, create, edit)
}

func (s *Store) editBlock(ctx context.Context, tenant, agentID, label string, by repo.BlockEdit, create bool,
	edit func(*model.Block) error) (model.Block, error) {
	var b model.Block
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointBlockWrite); err != nil {
			return err
		}
		var err error
		b, err = findBlock(ctx, tx, tenant, agentID, label)
		switch {
		case err == nil:
		case create && model.IsNotFound(err, "block"):
			b = model.Block{AgentID: agentID, Label: label, Limit: model.DefaultBlockLimit}
		default:
			return err
		}
		if b.ReadOnly && by == repo.EditByTool {
			return model.ReadOnlyBlock(label)
		}
		if err := edit(&b); err != nil {
			return err
		}
		if err := saveBlock(tx, tenant, &b); err != nil {
			return err
		}
		return present(ctx, tx, tenant, &b, agentID, label)
	})
	return b, err
}

// saveBlock writes b as its next version, and that version into the history.
func saveBlock(tx *sql.Tx, tenant string, b *model.Block) error {
	if err := model.CheckLimit(b.Label, b.Value, b.Limit); err != nil {
		return err
	}
	if b.ID == "" {
		b.ID = newID(model.PrefixBlock)
	}
	b.Version++
	b.UpdatedAt = model.Now()
	if _, err := tx.Exec(`INSERT INTO blocks (tenant_id, agent_id, label, id, value, limit_chars, description, read_only, version, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, agent_id, label) DO UPDATE SET value = excluded.value, limit_chars = excluded.limit_chars,
			description = excluded.description, read_only = excluded.read_only, version = excluded.version, updated_at = excluded.updated_at`,
		tenant, b.AgentID, b.Label, b.ID, b.Value, b.Limit, b.Description, b.ReadOnly, b.Version, int64(b.UpdatedAt)); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO block_history (tenant_id, agent_id, label, version, value, limit_chars, description, read_only, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenant, b.AgentID, b.Label, b.Version, b.Value, b.Limit, b.Description, b.ReadOnly, int64(b.UpdatedAt)); err != nil {
		return err
	}
	return pruneBlockHistory(tx, tenant, b)
}

// A block's history keeps its newest versions, at most blockHistoryVersions of
// them and at most blockHistoryBytes of text in all (the current version always
// stays). Every version is stored whole, so without a bound a 1 MB block given N
// one-character appends would keep N MB.
const (
	blockHistoryVersions = 100
	blockHistoryBytes    = 8 << 20
)

// pruneBlockHistory drops the versions of b's history past those bounds.
func pruneBlockHistory(tx *sql.Tx, tenant string, b *model.Block) error {
	_, err := tx.Exec(`DELETE FROM block_history WHERE tenant_id = ?1 AND agent_id = ?2 AND label = ?3 AND version < MAX(?4 - ?5 + 1,
		COALESCE((SELECT MIN(version) FROM (SELECT version, SUM(length(CAST(value AS BLOB))) OVER (ORDER BY version DESC) AS total
			FROM block_history WHERE tenant_id = ?1 AND agent_id = ?2 AND label = ?3) WHERE total <= ?6), ?4))`,
		tenant, b.AgentID, b.Label, b.Version, blockHistoryVersions, blockHistoryBytes)
	return err
}

// DeleteBlock removes a block, its history and its attachments; for an
// attached label, only the attachment (another agent's block is not this
// agent's to delete). Errors: KindNotFound.
func (s *Store) DeleteBlock(ctx context.Context, tenant, agentID, label string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointBlockWrite); err != nil {
			return err
		}
		b, err := findBlock(ctx, tx, tenant, agentID, label)
		if err != nil {
			return err
		}
		if b.AgentID != agentID {
			return detach(ctx, tx, tenant, agentID, label)
		}
		for _, q := range []string{
			`DELETE FROM block_attachments WHERE tenant_id = ? AND owner_agent_id = ? AND owner_label = ?`,
			`DELETE FROM block_history WHERE tenant_id = ? AND agent_id = ? AND label = ?`,
			`DELETE FROM blocks WHERE tenant_id = ? AND agent_id = ? AND label = ?`,
		} {
			if _, err := tx.Exec(q, tenant, agentID, label); err != nil {
				return err
			}
		}
		return nil
	})
}

// BlockHistory lists a block's versions, newest first. Errors: KindNotFound.
func (s *Store) BlockHistory(ctx context.Context, tenant, agentID, label string, p repo.PageRequest) (model.Page[model.Block], error) {
	if err := s.faults.Check(repo.PointBlockRead); err != nil {
		return model.Page[model.Block]{}, err
	}
	q := repo.Fingerprint("block_history", agentID, label)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Block]{}, err
	}
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return model.Page[model.Block]{}, mapErr(err)
	}
	defer func() { _ = tx.Rollback() }()
	owner, ownerLabel, err := resolveBlock(ctx, tx, tenant, agentID, label)
	if err != nil {
		return model.Page[model.Block]{}, err
	}
	cond, args := "", []any{tenant, owner, ownerLabel}
	if hasCur {
		cond, args = " AND h.version < ?", append(args, cur.N)
	}
	limit := p.Clamp()
	rows, err := tx.QueryContext(ctx, `SELECT h.version, h.value, h.limit_chars, h.description, h.read_only, h.updated_at, b.id
		FROM block_history h JOIN blocks b USING (tenant_id, agent_id, label)
		WHERE h.tenant_id = ? AND h.agent_id = ? AND h.label = ?`+cond+` ORDER BY h.version DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.Block]{}, mapErr(err)
	}
	out, err := collect(rows, func(sc scanner) (model.Block, error) {
		b := model.Block{AgentID: owner, Label: ownerLabel}
		err := sc.Scan(&b.Version, &b.Value, &b.Limit, &b.Description, &b.ReadOnly, &b.UpdatedAt, &b.ID)
		return b, err
	})
	if err != nil {
		return model.Page[model.Block]{}, err
	}
	r := blockReader{ctx: ctx, tx: tx, st: &s.rst}
	if len(out) == 0 && !hasCur {
		if _, err := findBlock(ctx, r, tenant, agentID, label); err != nil {
			return model.Page[model.Block]{}, err
		}
	}
	for i := range out {
		out[i].SeenAs(agentID, label)
	}
	if err := fillShared(ctx, r, tenant, out); err != nil {
		return model.Page[model.Block]{}, err
	}
	return repo.NewPage(out, limit, func(last model.Block) repo.Cursor { return repo.Cursor{Q: q, N: last.Version} }), nil
}

// RenameBlock moves a block, its value and its history, to label to, in one
// write; the block keeps its id and version, and its attachments follow it (the
// foreign key cascades). An attached label is renamed under this agent only.
// Errors: KindNotFound, block_exists, read_only (tools).
func (s *Store) RenameBlock(ctx context.Context, tenant, agentID, from, to string, by repo.BlockEdit) (model.Block, error) {
	var b model.Block
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointBlockWrite); err != nil {
			return err
		}
		var err error
		if b, err = findBlock(ctx, tx, tenant, agentID, from); err != nil {
			return err
		}
		if b.ReadOnly && by == repo.EditByTool {
			return model.ReadOnlyBlock(from)
		}
		if from == to {
			return model.BlockExists(to)
		}
		switch _, err := findBlock(ctx, tx, tenant, agentID, to); {
		case err == nil:
			return model.BlockExists(to)
		case !model.IsNotFound(err, "block"):
			return err
		}
		if b.AgentID != agentID {
			if _, err := tx.ExecContext(ctx, `UPDATE block_attachments SET label = ? WHERE tenant_id = ? AND agent_id = ? AND label = ?`,
				to, tenant, agentID, from); err != nil {
				return err
			}
			return present(ctx, tx, tenant, &b, agentID, to)
		}
		b.Label, b.UpdatedAt = to, model.Now()
		if _, err := tx.ExecContext(ctx, `DELETE FROM block_history WHERE tenant_id = ? AND agent_id = ? AND label = ?`,
			tenant, agentID, to); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE block_history SET label = ? WHERE tenant_id = ? AND agent_id = ? AND label = ?`,
			to, tenant, agentID, from); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `UPDATE blocks SET label = ?, updated_at = ? WHERE tenant_id = ? AND agent_id = ? AND label = ?`,
			to, int64(b.UpdatedAt), tenant, agentID, from); err != nil {
			return err
		}
		return present(ctx, tx, tenant, &b, agentID, to)
	})
	return b, err
}
