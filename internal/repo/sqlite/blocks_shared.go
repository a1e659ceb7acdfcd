package sqlite

import (
	"cmp"
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Shared blocks: an attachment (block_attachments) shows another agent's block
// under a label of this one. Every block method finds a label's block through
// findBlock or resolveBlock, so a read or write through either agent acts on
// the one block.

// resolveBlock says where agentID's block label is kept: under the agent
// itself, or, when label is an attachment, under its owner's agent and label.
// (findBlock reads the block itself the same way, in one query.)
func resolveBlock(ctx context.Context, q querier, tenant, agentID, label string) (owner, ownerLabel string, err error) {
	err = q.QueryRowContext(ctx, `SELECT owner_agent_id, owner_label FROM block_attachments
		WHERE tenant_id = ? AND agent_id = ? AND label = ?`, tenant, agentID, label).Scan(&owner, &ownerLabel)
	if err == sql.ErrNoRows {
		return agentID, label, nil
	}
	return owner, ownerLabel, mapErr(err)
}

// present turns b, read where it is kept, into the block agentID sees as
// label, with its attachments.
func present(ctx context.Context, q querier, tenant string, b *model.Block, agentID, label string) error {
	b.SeenAs(agentID, label)
	one := []model.Block{*b}
	if err := fillShared(ctx, q, tenant, one); err != nil {
		return err
	}
	*b = one[0]
	return nil
}

// sharedQuery lists the attachments of the blocks of the agents in the JSON
// list ?2: one text, whatever the number of agents, so that it is prepared once.
const sharedQuery = `SELECT owner_agent_id, owner_label, agent_id, label FROM block_attachments
	WHERE tenant_id = ? AND owner_agent_id IN (SELECT value FROM json_each(?))
	ORDER BY owner_agent_id, owner_label, agent_id, label`

// fillShared sets each block's SharedWith, in one query.
func fillShared(ctx context.Context, q querier, tenant string, blocks []model.Block) error {
	if len(blocks) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, sharedQuery, tenant, encodeList(repo.OwnerAgents(blocks)))
	if err != nil {
		return mapErr(err)
	}
	atts, err := collect(rows, func(sc scanner) (a repo.Attachment, err error) {
		err = sc.Scan(&a.Owner.AgentID, &a.Owner.Label, &a.At.AgentID, &a.At.Label)
		return a, err
	})
	if err != nil {
		return err
	}
	repo.SetSharedWith(blocks, atts)
	return nil
}

// blockReader runs the block reads on the read pool's prepared statements
// (readStatements), inside tx when it is set; parsing them again for every read
// was more than half of a block read's CPU. Any other query runs as given.
type blockReader struct {
	ctx context.Context
	db  *sql.DB
	tx  *sql.Tx
	st  *readStatements
}

func (s *Store) blockReader(ctx context.Context) blockReader {
	return blockReader{ctx: ctx, db: s.rdb, st: &s.rst}
}

func (r blockReader) stmt(query string) *sql.Stmt {
	var st *sql.Stmt
	switch query {
	case blockAtQuery:
		st = r.st.blockAt
	case sharedQuery:
		st = r.st.shared
	case agentBlocksQuery:
		st = r.st.blocks
	default:
		return nil
	}
	if r.tx != nil {
		return r.tx.StmtContext(r.ctx, st)
	}
	return st
}

func (r blockReader) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	switch st := r.stmt(query); {
	case st != nil:
		return st.QueryContext(ctx, args...)
	case r.tx != nil:
		return r.tx.QueryContext(ctx, query, args...)
	default:
		return r.db.QueryContext(ctx, query, args...)
	}
}

func (r blockReader) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	switch st := r.stmt(query); {
	case st != nil:
		return st.QueryRowContext(ctx, args...)
	case r.tx != nil:
		return r.tx.QueryRowContext(ctx, query, args...)
	default:
		return r.db.QueryRowContext(ctx, query, args...)
	}
}

// blockAtQuery reads the block agent ?2 sees as label ?3 where it is kept: its
// own, or its owner's through an attachment (a label is never both).
const blockAtQuery = `SELECT ` + blockColumns + ` FROM blocks WHERE tenant_id = ?1 AND agent_id = ?2 AND label = ?3
	UNION ALL
	SELECT b.id, b.agent_id, b.label, b.value, b.limit_chars, b.description, b.read_only, b.version, b.updated_at
	FROM block_attachments a JOIN blocks b ON b.tenant_id = a.tenant_id AND b.agent_id = a.owner_agent_id AND b.label = a.owner_label
	WHERE a.tenant_id = ?1 AND a.agent_id = ?2 AND a.label = ?3`

// agentBlocksQuery lists an agent's blocks ($1 tenant, $2 agent): its own and
// those attached to it, each under the agent's label, in label order.
const agentBlocksQuery = `SELECT id, agent_id, label, value, limit_chars, description, read_only, version, updated_at,
		NULL AS owner_agent_id, NULL AS owner_label
	FROM blocks WHERE tenant_id = ?1 AND agent_id = ?2
	UNION ALL
	SELECT b.id, a.agent_id, a.label, b.value, b.limit_chars, b.description, b.read_only, b.version, b.updated_at,
		a.owner_agent_id, a.owner_label
	FROM block_attachments a JOIN blocks b ON b.tenant_id = a.tenant_id AND b.agent_id = a.owner_agent_id AND b.label = a.owner_label
	WHERE a.tenant_id = ?1 AND a.agent_id = ?2
	ORDER BY label`

func scanAgentBlock(sc scanner) (model.Block, error) {
	var b model.Block
	err := sc.Scan(&b.ID, &b.AgentID, &b.Label, &b.Value, &b.Limit, &b.Description, &b.ReadOnly, &b.Version, &b.UpdatedAt,
		&b.OwnerAgentID, &b.OwnerLabel)
	return b, err
}

// AttachBlock shares agent in.AgentID's block in.Label with agentID, under
// in.As (in.Label when empty). Errors: KindNotFound (either agent, the
// block), block_exists, already_attached, block_attached, KindInvalid (the
// block is agentID's own).
func (s *Store) AttachBlock(ctx context.Context, tenant, agentID string, in model.AttachBlock) (model.Block, error) {
	as := cmp.Or(in.As, in.Label)
	var b model.Block
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointBlockWrite); err != nil {
			return err
		}
		if err := agentExists(ctx, tx, tenant, agentID); err != nil {
			return err
		}
		if in.AgentID == agentID {
			return model.Invalid(model.FieldError{Field: "agent_id", Message: "is this agent; attach another agent's block"})
		}
		var err error
		if b, err = findBlock(ctx, tx, tenant, in.AgentID, in.Label); err != nil {
			return err
		}
		if b.AgentID != in.AgentID {
			return model.AttachedBlock(in.Label, b.AgentID, b.Label)
		}
		switch _, err := findBlock(ctx, tx, tenant, agentID, as); {
		case err == nil:
			return model.BlockExists(as)
		case !model.IsNotFound(err, "block"):
			return err
		}
		var have string
		switch err := tx.QueryRowContext(ctx, `SELECT label FROM block_attachments WHERE tenant_id = ? AND agent_id = ?
			AND owner_agent_id = ? AND owner_label = ?`, tenant, agentID, b.AgentID, b.Label).Scan(&have); {
		case err == nil:
			return model.AlreadyAttached(in.Label, have)
		case err != sql.ErrNoRows:
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO block_attachments (tenant_id, agent_id, label, owner_agent_id, owner_label, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`, tenant, agentID, as, b.AgentID, b.Label, int64(model.Now())); err != nil {
			return err
		}
		return present(ctx, tx, tenant, &b, agentID, as)
	})
	return b, err
}

// DetachBlock removes agentID's attachment label; the owner's block stays.
// Errors: KindNotFound, not_attached.
func (s *Store) DetachBlock(ctx context.Context, tenant, agentID, label string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointBlockWrite); err != nil {
			return err
		}
		b, err := findBlock(ctx, tx, tenant, agentID, label)
		if err != nil {
			return err
		}
		if b.AgentID == agentID {
			return model.NotAttached(label)
		}
		return detach(ctx, tx, tenant, agentID, label)
	})
}

func detach(ctx context.Context, tx *sql.Tx, tenant, agentID, label string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM block_attachments WHERE tenant_id = ? AND agent_id = ? AND label = ?`, tenant, agentID, label)
	return err
}
