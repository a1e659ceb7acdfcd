package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const memBlockColumns = `id, agent_id, label, value, limit_chars, description, read_only, version, updated_at`

func memScanBlock(row pgx.Row) (model.Block, error) {
	var (
		b        model.Block
		readOnly int32
		updated  int64
	)
	err := row.Scan(&b.ID, &b.AgentID, &b.Label, &b.Value, &b.Limit, &b.Description, &readOnly, &b.Version, &updated)
	b.ReadOnly, b.UpdatedAt = readOnly != 0, model.Time(updated)
	return b, err
}

// ListBlocks returns an agent's blocks, its own and those attached to it, in
// label order: bytewise (COLLATE "C"), as SQLite orders them, whatever the
// database's collation. Errors: KindNotFound.
func (s *Store) ListBlocks(ctx context.Context, tenant, agentID string) ([]model.Block, error) {
	if err := s.faults.Check(repo.PointBlockRead); err != nil {
		return nil, err
	}
	out, err := memAgentBlocks(ctx, s.pool, tenant, agentID)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if err := memAgentExists(ctx, s.pool, tenant, agentID); err != nil {
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
	return memGetBlock(ctx, s.pool, tenant, agentID, label)
}

// memGetBlock reads agentID's block label as the agent sees it, telling a
// missing agent from a missing block.
func memGetBlock(ctx context.Context, db memDB, tenant, agentID, label string) (model.Block, error) {
	b, err := memFindBlock(ctx, db, tenant, agentID, label)
	if err != nil {
		return b, err
	}
	return b, memPresent(ctx, db, tenant, &b, agentID, label)
}

// memFindBlock reads agentID's block label where it is kept, its own or the
// one an attachment names (a label is never both), in one round trip: b's
// AgentID and Label are its owner's.
func memFindBlock(ctx context.Context, db memDB, tenant, agentID, label string) (model.Block, error) {
	b, err := memScanBlock(db.QueryRow(ctx, `SELECT `+memBlockColumns+` FROM blocks
		WHERE tenant_id = $1 AND agent_id = $2 AND label = $3
		UNION ALL
		SELECT b.id, b.agent_id, b.label, b.value, b.limit_chars, b.description, b.read_only, b.version, b.updated_at
		FROM block_attachments a JOIN blocks b ON b.tenant_id = a.tenant_id AND b.agent_id = a.owner_agent_id AND b.label = a.owner_label
		WHERE a.tenant_id = $1 AND a.agent_id = $2 AND a.label = $3`, tenant, agentID, label))
	if errors.Is(err, pgx.ErrNoRows) {
		if err := memAgentExists(ctx, db, tenant, agentID); err != nil {
			return b, err
		}
		return b, model.NotFound("block", label)
	}
	return b, mapErr(err)
}

// memLockBlock reads agentID's block label, of a locked agent, where it is
// kept, and locks its row until the write commits: the version read is the one
// the write replaces. An attached block's owner agent is held shared as well,
// as its own writes hold it. found is false for a missing block; b's AgentID
// and Label are its owner's.
func memLockBlock(ctx context.Context, tx pgx.Tx, tenant, agentID, label string) (b model.Block, found bool, err error) {
	owner, ownerLabel, err := memResolveBlock(ctx, tx, tenant, agentID, label)
	if err != nil {
		return model.Block{}, false, err
	}
	if owner != agentID {
		if err := lockAgentForMemory(ctx, tx, tenant, owner); err != nil {
			if model.IsNotFound(err, "agent") {
				err = errBlockMoved // deleted with its attachments since: resolve again
			}
			return model.Block{}, false, err
		}
	}
	b, err = memScanBlock(tx.QueryRow(ctx, `SELECT `+memBlockColumns+` FROM blocks
		WHERE tenant_id = $1 AND agent_id = $2 AND label = $3 FOR UPDATE`, tenant, owner, ownerLabel))
	switch {
	case errors.Is(err, pgx.ErrNoRows) && owner != agentID:
		return model.Block{}, false, errBlockMoved
	case errors.Is(err, pgx.ErrNoRows):
		return model.Block{}, false, nil
	}
	return b, err == nil, err
}

// errBlockCreatedMeanwhile says that another transaction created the block
// this one found missing: the write starts over and finds it.
var errBlockCreatedMeanwhile = errors.New("postgres: block created by a concurrent write")

// errBlockMoved says that an attached block went (deleted, its owner deleted)
// between reading the attachment and locking the block: the write starts over
// and reads the label again.
var errBlockMoved = errors.New("postgres: attached block removed by a concurrent write")

// runBlockWrite runs a block write in one transaction with the agent's row
// held shared (a concurrent DeleteAgent waits), again when fn lost the race
// to create the block. Under READ COMMITTED the insert that lost waited for
// the winner's commit, so fn's next read sees the winner's block; under a
// stricter isolation the insert fails with a serialization error, which s.tx
// retries.
func runBlockWrite(ctx context.Context, s *Store, tenant, agentID string, fn func(pgx.Tx) error) error {
	return runAgentWrite(ctx, s, tenant, agentID, lockAgentForMemory, fn)
}

// runAgentWrite is runBlockWrite with the agent's row locked by lock: an
// attach or a rename, which make a label the block writes do not check for,
// hold it exclusively (lockAgentExclusive), so that no write of the agent's
// memory runs beside them.
func runAgentWrite(ctx context.Context, s *Store, tenant, agentID string,
	lock func(context.Context, pgx.Tx, string, string) error, fn func(pgx.Tx) error) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointBlockWrite); err != nil {
			return err
		}
		if err := lock(ctx, tx, tenant, agentID); err != nil {
			return err
		}
		for try := 0; ; try++ {
			err := fn(tx)
			if !(errors.Is(err, errBlockCreatedMeanwhile) || errors.Is(err, errBlockMoved)) || try == 4 {
				return err
			}
		}
	})
}

// PutBlock creates or replaces a block. With ifMatch set, the block must exist at
// that version (KindPrecondition otherwise). created says which it was.
func (s *Store) PutBlock(ctx context.Context, tenant, agentID, label string, in model.PutBlock, ifMatch *int64) (b model.Block, created bool, err error) {
	err = runBlockWrite(ctx, s, tenant, agentID, func(tx pgx.Tx) error {
		cur, exists, err := memLockBlock(ctx, tx, tenant, agentID, label)
		if err != nil {
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
		if err := memSaveBlock(ctx, tx, tenant, &b, exists); err != nil {
			return err
		}
		return memPresent(ctx, tx, tenant, &b, agentID, label)
	})
	return b, created, err
}

// AppendBlock appends content on a new line, creating a missing block
// (append-or-create: the block's row lock, or the unique key when it is
// missing, orders concurrent appends of every process, so none makes a second
// block or loses text). Errors: KindNotFound (agent), limit_exceeded, read_only
// (tools).
func (s *Store) AppendBlock(ctx context.Context, tenant, agentID, label, content string, by repo.BlockEdit) (model.Block, error) {
	return memEditBlock(ctx, s, tenant, agentID, label, by, true, func(b *model.Block) error {
		b.Value = model.AppendValue(b.Value, content)
		return nil
	})
}

// ReplaceBlock replaces every occurrence of old with new. Errors: KindNotFound,
// old_not_found, limit_exceeded, read_only (tools).
func (s *Store) ReplaceBlock(ctx context.Context, tenant, agentID, label, old, new string, by repo.BlockEdit) (model.Block, error) {
	return memEditBlock(ctx, s, tenant, agentID, label, by, false, func(b *model.Block) error {
		v, err := model.ReplaceValue(label, b.Value, old, new)
		b.Value = v
		return err
	})
}

// EditBlock applies edit to a locked block in one transaction; with create, a
// missing block reaches edit new (Version 0). edit may run more than once (a
// lost race to create the block starts over), so it must only change b.
// Errors: KindNotFound, limit_exceeded, read_only (tools), and edit's own.
func (s *Store) EditBlock(ctx context.Context, tenant, agentID, label string, by repo.BlockEdit, create bool,
	edit func(*model.Block) error) (model.Block, error) {
	return memEditBlock(ctx, s, tenant, agentID, label, by, create, edit)
}

func memEditBlock(ctx context.Context, s *Store, tenant, agentID, label string, by repo.BlockEdit, create bool,
	edit func(*model.Block) error) (model.Block, error) {
	var b model.Block
	err := runBlockWrite(ctx, s, tenant, agentID, func(tx pgx.Tx) error {
		var (
			found bool
			err   error
		)
		b, found, err = memLockBlock(ctx, tx, tenant, agentID, label)
		switch {
		case err != nil:
			return err
		case !found && !create:
			return model.NotFound("block", label)
		case !found:
			b = model.Block{AgentID: agentID, Label: label, Limit: model.DefaultBlockLimit}
		}
		if b.ReadOnly && by == repo.EditByTool {
			return model.ReadOnlyBlock(label)
		}
		if err := edit(&b); err != nil {
			return err
		}
		if err := memSaveBlock(ctx, tx, tenant, &b, found); err != nil {
			return err
		}
		return memPresent(ctx, tx, tenant, &b, agentID, label)
	})
	return b, err
}

// memSaveBlock writes b as its next version, and that version into the
// history. exists says whether b's row was found (and locked); when it was
// not, the insert does nothing if another transaction made the row meanwhile.
func memSaveBlock(ctx context.Context, tx pgx.Tx, tenant string, b *model.Block, exists bool) error {
	if err := model.CheckLimit(b.Label, b.Value, b.Limit); err != nil {
		return err
	}
	if b.ID == "" {
		b.ID = newID(model.PrefixBlock)
	}
	b.Version++
	b.UpdatedAt = model.Now()
	readOnly := 0
	if b.ReadOnly {
		readOnly = 1
	}
	if exists {
		if _, err := tx.Exec(ctx, `UPDATE blocks SET value = $4, limit_chars = $5, description = $6, read_only = $7, version = $8,
			updated_at = $9 WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`,
			tenant, b.AgentID, b.Label, b.Value, b.Limit, b.Description, readOnly, b.Version, int64(b.UpdatedAt)); err != nil {
			return err
		}
	} else {
		tag, err := tx.Exec(ctx, `INSERT INTO blocks (tenant_id, agent_id, label, id, value, limit_chars, description, read_only, version, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (tenant_id, agent_id, label) DO NOTHING`,
			tenant, b.AgentID, b.Label, b.ID, b.Value, b.Limit, b.Description, readOnly, b.Version, int64(b.UpdatedAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errBlockCreatedMeanwhile
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO block_history (tenant_id, agent_id, label, version, value, limit_chars, description, read_only, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		tenant, b.AgentID, b.Label, b.Version, b.Value, b.Limit, b.Description, readOnly, int64(b.UpdatedAt)); err != nil {
		return err
	}
	return pruneBlockHistory(ctx, tx, tenant, b)
}

// DeleteBlock removes a block, its history and its attachments; for an
// attached label, only the attachment (another agent's block is not this
// agent's to delete). Errors: KindNotFound.
func (s *Store) DeleteBlock(ctx context.Context, tenant, agentID, label string) error {
	return runBlockWrite(ctx, s, tenant, agentID, func(tx pgx.Tx) error {
		b, found, err := memLockBlock(ctx, tx, tenant, agentID, label)
		if err != nil || !found {
			if err == nil {
				err = model.NotFound("block", label)
			}
			return err
		}
		if b.AgentID != agentID {
			return memDetach(ctx, tx, tenant, agentID, label)
		}
		for _, q := range []string{
			`DELETE FROM block_attachments WHERE tenant_id = $1 AND owner_agent_id = $2 AND owner_label = $3`,
			`DELETE FROM block_history WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`,
			`DELETE FROM blocks WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`,
		} {
			if _, err := tx.Exec(ctx, q, tenant, agentID, label); err != nil {
				return err
			}
		}
		return nil
	})
}

// RenameBlock moves a block, its value and its history, to label to, in one
// transaction; the block keeps its id and version, and its attachments follow
// it (the foreign key cascades). An attached label is renamed under this agent
// only. The agent's row is held exclusively, so no label appears meanwhile.
// Errors: KindNotFound, block_exists, read_only (tools).
func (s *Store) RenameBlock(ctx context.Context, tenant, agentID, from, to string, by repo.BlockEdit) (model.Block, error) {
	var b model.Block
	err := runAgentWrite(ctx, s, tenant, agentID, lockAgentExclusive, func(tx pgx.Tx) error {
		var (
			found bool
			err   error
		)
		if b, found, err = memLockBlock(ctx, tx, tenant, agentID, from); err != nil || !found {
			if err == nil {
				err = model.NotFound("block", from)
			}
			return err
		}
		if b.ReadOnly && by == repo.EditByTool {
			return model.ReadOnlyBlock(from)
		}
		if from == to {
			return model.BlockExists(to)
		}
		if _, found, err := memLockBlock(ctx, tx, tenant, agentID, to); err != nil || found {
			if err == nil {
				err = model.BlockExists(to)
			}
			return err
		}
		if b.AgentID != agentID {
			if _, err := tx.Exec(ctx, `UPDATE block_attachments SET label = $4 WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`,
				tenant, agentID, from, to); err != nil {
				return mapErr(err)
			}
			return memPresent(ctx, tx, tenant, &b, agentID, to)
		}
		b.Label, b.UpdatedAt = to, model.Now()
		if _, err := tx.Exec(ctx, `DELETE FROM block_history WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`,
			tenant, agentID, to); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE block_history SET label = $4 WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`,
			tenant, agentID, from, to); err != nil {
			return mapErr(err)
		}
		if _, err = tx.Exec(ctx, `UPDATE blocks SET label = $4, updated_at = $5 WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`,
			tenant, agentID, from, to, int64(b.UpdatedAt)); err != nil {
			return mapErr(err)
		}
		return memPresent(ctx, tx, tenant, &b, agentID, to)
	})
	return b, err
}
