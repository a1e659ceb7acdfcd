package postgres

import (
	"cmp"
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Shared blocks: an attachment (block_attachments) shows another agent's block
// under a label of this one. Every block method finds a label's block through
// memFindBlock, memLockBlock or memResolveBlock, so a read or write through
// either agent acts on the one block.

// memResolveBlock says where agentID's block label is kept: under the agent
// itself, or, when label is an attachment, under its owner's agent and label.
func memResolveBlock(ctx context.Context, db memDB, tenant, agentID, label string) (owner, ownerLabel string, err error) {
	err = db.QueryRow(ctx, `SELECT owner_agent_id, owner_label FROM block_attachments
		WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`, tenant, agentID, label).Scan(&owner, &ownerLabel)
	if errors.Is(err, pgx.ErrNoRows) {
		return agentID, label, nil
	}
	return owner, ownerLabel, mapErr(err)
}

// memPresent turns b, read where it is kept, into the block agentID sees as
// label, with its attachments.
func memPresent(ctx context.Context, db memDB, tenant string, b *model.Block, agentID, label string) error {
	b.SeenAs(agentID, label)
	one := []model.Block{*b}
	if err := memFillShared(ctx, db, tenant, one); err != nil {
		return err
	}
	*b = one[0]
	return nil
}

// memFillShared sets each block's SharedWith, in one query.
func memFillShared(ctx context.Context, db memDB, tenant string, blocks []model.Block) error {
	if len(blocks) == 0 {
		return nil
	}
	rows, err := db.Query(ctx, `SELECT owner_agent_id, owner_label, agent_id, label FROM block_attachments
		WHERE tenant_id = $1 AND owner_agent_id = ANY($2)
		ORDER BY owner_agent_id COLLATE "C", owner_label COLLATE "C", agent_id COLLATE "C", label COLLATE "C"`,
		tenant, repo.OwnerAgents(blocks))
	if err != nil {
		return mapErr(err)
	}
	atts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (a repo.Attachment, err error) {
		err = r.Scan(&a.Owner.AgentID, &a.Owner.Label, &a.At.AgentID, &a.At.Label)
		return a, err
	})
	if err != nil {
		return mapErr(err)
	}
	repo.SetSharedWith(blocks, atts)
	return nil
}

// memAgentBlocks lists an agent's blocks, its own and those attached to it,
// each under the agent's label, in label order (bytewise, as SQLite orders
// them, whatever the collation), with their attachments.
func memAgentBlocks(ctx context.Context, db memDB, tenant, agentID string) ([]model.Block, error) {
	rows, err := db.Query(ctx, `SELECT * FROM (
		SELECT `+memBlockColumns+`, NULL::text AS owner_agent_id, NULL::text AS owner_label
		FROM blocks WHERE tenant_id = $1 AND agent_id = $2
		UNION ALL
		SELECT b.id, a.agent_id, a.label, b.value, b.limit_chars, b.description, b.read_only, b.version, b.updated_at,
			a.owner_agent_id, a.owner_label
		FROM block_attachments a JOIN blocks b ON b.tenant_id = a.tenant_id AND b.agent_id = a.owner_agent_id AND b.label = a.owner_label
		WHERE a.tenant_id = $1 AND a.agent_id = $2) agent_blocks
		ORDER BY label COLLATE "C"`, tenant, agentID)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Block, error) {
		var (
			b        model.Block
			readOnly int32
			updated  int64
		)
		err := r.Scan(&b.ID, &b.AgentID, &b.Label, &b.Value, &b.Limit, &b.Description, &readOnly, &b.Version, &updated,
			&b.OwnerAgentID, &b.OwnerLabel)
		b.ReadOnly, b.UpdatedAt = readOnly != 0, model.Time(updated)
		return b, err
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return out, memFillShared(ctx, db, tenant, out)
}

// AttachBlock shares agent in.AgentID's block in.Label with agentID, under
// in.As (in.Label when empty). The attaching agent's row is held exclusively,
// so no block takes the label meanwhile; the owner's block is locked shared
// (FOR KEY SHARE), so it cannot go before the attachment commits. Errors:
// KindNotFound (either agent, the block), block_exists, already_attached,
// block_attached, KindInvalid (the block is agentID's own).
func (s *Store) AttachBlock(ctx context.Context, tenant, agentID string, in model.AttachBlock) (model.Block, error) {
	as := cmp.Or(in.As, in.Label)
	var b model.Block
	err := runAgentWrite(ctx, s, tenant, agentID, lockAgentExclusive, func(tx pgx.Tx) error {
		if in.AgentID == agentID {
			return model.Invalid(model.FieldError{Field: "agent_id", Message: "is this agent; attach another agent's block"})
		}
		if err := lockAgentForMemory(ctx, tx, tenant, in.AgentID); err != nil {
			return err
		}
		owner, ownerLabel, err := memResolveBlock(ctx, tx, tenant, in.AgentID, in.Label)
		if err != nil {
			return err
		}
		if owner != in.AgentID {
			return model.AttachedBlock(in.Label, owner, ownerLabel)
		}
		b, err = memScanBlock(tx.QueryRow(ctx, `SELECT `+memBlockColumns+` FROM blocks
			WHERE tenant_id = $1 AND agent_id = $2 AND label = $3 FOR KEY SHARE`, tenant, owner, ownerLabel))
		if errors.Is(err, pgx.ErrNoRows) {
			return model.NotFound("block", in.Label)
		}
		if err != nil {
			return err
		}
		switch _, err := memFindBlock(ctx, tx, tenant, agentID, as); {
		case err == nil:
			return model.BlockExists(as)
		case !model.IsNotFound(err, "block"):
			return err
		}
		var have string
		switch err := tx.QueryRow(ctx, `SELECT label FROM block_attachments WHERE tenant_id = $1 AND agent_id = $2
			AND owner_agent_id = $3 AND owner_label = $4`, tenant, agentID, owner, ownerLabel).Scan(&have); {
		case err == nil:
			return model.AlreadyAttached(in.Label, have)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO block_attachments (tenant_id, agent_id, label, owner_agent_id, owner_label, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, tenant, agentID, as, owner, ownerLabel, int64(model.Now())); err != nil {
			return mapErr(err)
		}
		return memPresent(ctx, tx, tenant, &b, agentID, as)
	})
	return b, err
}

// DetachBlock removes agentID's attachment label; the owner's block stays.
// Errors: KindNotFound, not_attached.
func (s *Store) DetachBlock(ctx context.Context, tenant, agentID, label string) error {
	return runBlockWrite(ctx, s, tenant, agentID, func(tx pgx.Tx) error {
		b, err := memFindBlock(ctx, tx, tenant, agentID, label)
		if err != nil {
			return err
		}
		if b.AgentID == agentID {
			return model.NotAttached(label)
		}
		return memDetach(ctx, tx, tenant, agentID, label)
	})
}

func memDetach(ctx context.Context, tx pgx.Tx, tenant, agentID, label string) error {
	_, err := tx.Exec(ctx, `DELETE FROM block_attachments WHERE tenant_id = $1 AND agent_id = $2 AND label = $3`, tenant, agentID, label)
	return err
}
