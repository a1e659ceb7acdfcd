package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// ForkSession makes a new session whose history is the parent's first AtSeq
// messages (default: all of them), shared rather than copied: the fork costs the
// same whatever the parent's length. The fork's counters are the parent's at
// AtSeq, read from that message's running totals. Errors: KindNotFound,
// validation_failed (at_seq beyond the parent), conflict (id taken: the fork
// takes in.ID as repo.PlaceSession says, for the parent's user).
func (s *Store) ForkSession(ctx context.Context, tenant, parentID string, in model.ForkSession) (model.Session, error) {
	var fork model.Session
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		parent, err := getSession(ctx, tx, tenant, parentID)
		if err != nil {
			return err
		}
		at := parent.LastSeq
		if in.AtSeq != nil {
			at = *in.AtSeq
		}
		var from *model.Checkpoint
		if in.AtCheckpoint != nil {
			cp, err := ckstore.ForkPoint(ctx, ckRows{tx, tenant, parentID}, *in.AtCheckpoint)
			if err != nil {
				return err
			}
			from, at = &cp, cp.LastSeq
		}
		if at > parent.LastSeq {
			return model.Invalid(model.FieldError{Field: "at_seq",
				Message: "is beyond the parent's last seq " + itoa(parent.LastSeq)})
		}
		segs, err := lineage(ctx, tx, tenant, parentID)
		if err != nil {
			return err
		}
		var t runningTotals
		if at > 0 {
			_, totals, ok, err := messageAt(ctx, tx, tenant, segs, at)
			if err != nil {
				return err
			}
			if !ok {
				return model.Internal(errMissingSeq(parentID, at))
			}
			t = totals
		}
		tokens, cost := t.tokens, t.cost
		now := model.Now()
		fork = model.Session{ID: in.ID, AgentID: parent.AgentID, UserID: parent.UserID, Title: parent.Title, Status: model.StatusCreated,
			Metadata: parent.Metadata, MessageCount: at, LastSeq: at, TotalTokens: tokens, TotalCost: cost, TurnCount: t.turns,
			ParentID: &parent.ID, ForkedAtSeq: &at, CreatedAt: now, UpdatedAt: now}
		if fork.ID == "" {
			fork.ID = newID(model.PrefixSession)
		} else if fork.ID, err = repo.PlaceSession(in.ID, parent.UserID, in.UserSpace, sessionHolder(ctx, tx, tenant)); err != nil {
			return err
		}
		if in.Title != nil {
			fork.Title = in.Title
		}
		if in.Metadata != nil {
			fork.Metadata = in.Metadata
		}
		meta := fork.Metadata.String()
		fork.Incarnation = s.nextGID() // as CreateSession's
		_, err = tx.Exec(`INSERT INTO sessions (tenant_id, id, agent_id, user_id, title, status, metadata, message_count, last_seq,
			total_tokens, total_cost, turn_count, parent_id, forked_at_seq, prefix_shared, created_at, updated_at, incarnation)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
			tenant, fork.ID, fork.AgentID, fork.UserID, fork.Title, fork.Status, meta, at, at, tokens, cost, t.turns, parentID, at,
			int64(now), int64(now), fork.Incarnation)
		if isConstraint(err) {
			return repo.SessionTaken(fork.ID)
		}
		if err != nil {
			return err
		}
		if err := copyCompactions(ctx, tx, tenant, parentID, fork.ID, at); err != nil {
			return err
		}
		if from != nil {
			if err := copyForkCheckpoint(ctx, tx, tenant, parentID, fork.ID, *from); err != nil {
				return err
			}
		}
		stored, err := getSession(ctx, tx, tenant, fork.ID)
		if err != nil {
			return err
		}
		return s.recordEventAt(ctx, tx, fork.Incarnation, tenant, fork.ID, model.EventSessionCreated, repo.SessionEventData(stored))
	})
	return fork, err
}

// copyForkCheckpoint gives a fork its own copy of the checkpoint it starts
// from (ckstore.ForkCopy), with that checkpoint's pending writes.
func copyForkCheckpoint(ctx context.Context, tx *sql.Tx, tenant, parentID, forkID string, from model.Checkpoint) error {
	c, st := ckstore.ForkCopy(from, forkID, newID(model.PrefixCheckpoint))
	if err := insertCheckpoint(ctx, tx, tenant, c, st); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO checkpoint_writes (tenant_id, session_id, namespace, checkpoint_id, task_id, idx,
		channel, task_path, value, created_at)
		SELECT tenant_id, ?, namespace, checkpoint_id, task_id, idx, channel, task_path, value, created_at FROM checkpoint_writes
		WHERE tenant_id = ? AND session_id = ? AND namespace = ? AND checkpoint_id = ?`,
		forkID, tenant, parentID, c.Namespace, c.ClientID)
	return err
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func errMissingSeq(session string, seq int64) error {
	return fmt.Errorf("session %s: no message at seq %d of its lineage", session, seq)
}
