package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// PutCheckpoint records a runtime's state after an iteration. The iteration must
// be above the latest, and ExpectedIteration, when given, must be the latest: two
// workers resuming one session, in one process or several, cannot both write
// (stale_iteration). The newest keep checkpoints of the session are kept.
// Errors: KindNotFound, stale_iteration.
func (s *Store) PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, keep int) (model.Checkpoint, error) {
	w, err := ckstate.PutWrite(in)
	if err != nil {
		return model.Checkpoint{}, err
	}
	return s.writeCheckpointPG(ctx, tenant, sessionID, w, keep)
}

// PatchCheckpoint records iteration in.Iteration as the latest checkpoint's state
// with in.StatePatch applied (RFC 7396), under PutCheckpoint's fence and rules:
// what it stores and answers is what a PUT of the merged state would. Errors:
// KindNotFound, stale_iteration, no_checkpoint (nothing to patch yet), corrupted
// (the latest cannot be read), KindInvalid (the patch, or the state it makes,
// named under state_patch).
func (s *Store) PatchCheckpoint(ctx context.Context, tenant, sessionID string, in model.PatchCheckpoint, keep int) (model.Checkpoint, error) {
	w, err := ckstate.PatchWrite(in)
	if err != nil {
		return model.Checkpoint{}, err
	}
	return s.writeCheckpointPG(ctx, tenant, sessionID, w, keep)
}

// ckPlanPG works a write out against the session's latest checkpoint as q
// sees it.
func ckPlanPG(ctx context.Context, q ckQuerierPG, tenant, sessionID string, w ckstate.Write) (ckstate.Plan, error) {
	latest, err := ckLatestPG(ctx, q, tenant, sessionID, w.Patch != nil)
	if err != nil {
		return ckstate.Plan{}, err
	}
	return ckstate.PlanWrite(sessionID, w, latest)
}

// writeCheckpointPG plans a write outside the transaction, so that the JSON
// work of a large state is not done holding the session's lock; inside, once
// the lock is held, it plans again only if another write got there between.
func (s *Store) writeCheckpointPG(ctx context.Context, tenant, sessionID string, w ckstate.Write, keep int) (model.Checkpoint, error) {
	if keep <= 0 {
		keep = ckstate.DefaultKeep
	}
	planned, err := ckPlanPG(ctx, s.pool, tenant, sessionID, w)
	if err != nil {
		return model.Checkpoint{}, err
	}
	c := model.Checkpoint{ID: newID(model.PrefixCheckpoint), SessionID: sessionID, Iteration: w.Iteration, CreatedAt: model.Now()}
	var crashAfter bool
	err = s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if crashAfter, err = ckFaultPG(s.faults); err != nil {
			return err
		}
		if c.LastSeq, err = ckSessionPG(ctx, tx, tenant, sessionID, true); err != nil {
			return err
		}
		var latest int64
		var latestSHA string
		err = tx.QueryRow(ctx, `SELECT iteration, sha256 FROM checkpoints WHERE tenant_id = $1 AND session_id = $2
			ORDER BY iteration DESC LIMIT 1`, tenant, sessionID).Scan(&latest, &latestSHA)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := ckstate.Fence(w, latest); err != nil {
			return err
		}
		p := planned
		if p.Stale(latest, latestSHA) {
			if p, err = ckPlanPG(ctx, tx, tenant, sessionID, w); err != nil {
				return err
			}
		}
		if p.Err != nil {
			return p.Err
		}
		c.State = p.Canonical
		c.SHA256 = ckstate.Hash(c.Iteration, c.LastSeq, c.State)
		if err := insertCheckpointPG(ctx, tx, tenant, c, p.Stored); err != nil {
			return err
		}
		if err := keepAsDeltaPG(ctx, tx, tenant, sessionID, p.Delta, c.Iteration); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE sessions SET pause_until = $1 WHERE tenant_id = $2 AND id = $3`,
			p.Pause, tenant, sessionID); err != nil {
			return err
		}
		if err := recordEventPG(ctx, tx, tenant, sessionID, model.EventCheckpointCreated, repo.CheckpointEventData(c)); err != nil {
			return err
		}
		return pruneCheckpointsPG(ctx, tx, tenant, sessionID, keep)
	})
	if err == nil && crashAfter {
		err = model.Unavailable(fmt.Errorf("%w: %s at %s", repo.ErrInjected, repo.FaultCrashAfterCommit, repo.PointCheckpointWrite))
	}
	return c, err
}

// ckFaultPG fires the checkpoint-write fault point as SQLite's writer does: an
// error or a crash before the commit fails the write; a crash after it lets
// the write commit and then fails it, as a client sees a server killed then.
func ckFaultPG(f *repo.Faults) (crashAfter bool, err error) {
	switch k := f.Fire(repo.PointCheckpointWrite); k {
	case "":
		return false, nil
	case repo.FaultCrashAfterCommit:
		return true, nil
	default:
		return false, model.Unavailable(fmt.Errorf("%w: %s at %s", repo.ErrInjected, k, repo.PointCheckpointWrite))
	}
}

// insertCheckpointPG writes c as a full row.
func insertCheckpointPG(ctx context.Context, tx pgx.Tx, tenant string, c model.Checkpoint, st ckstate.Stored) error {
	_, err := tx.Exec(ctx, `INSERT INTO checkpoints (tenant_id, session_id, iteration, id, state, last_seq, sha256, created_at, codec, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		tenant, c.SessionID, c.Iteration, c.ID, st.Text, c.LastSeq, c.SHA256, int64(c.CreatedAt), st.Codec, ckBodyPG(st.Body))
	return err
}

// keepAsDeltaPG rewrites d's row as a delta from base (the iteration just
// written) when it fits the run of deltas under it (ckstate.Delta.Fits). The
// row must still be the full one the patch was computed from.
func keepAsDeltaPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string, d *ckstate.Delta, base int64) error {
	if d == nil {
		return nil
	}
	var n, size int64
	err := tx.QueryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(length(body)), 0)::bigint FROM checkpoints
		WHERE tenant_id = $1 AND session_id = $2 AND iteration < $3 AND iteration > COALESCE((
			SELECT MAX(iteration) FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 AND iteration < $3 AND kind = 'full'), 0)`,
		tenant, sessionID, d.Iteration).Scan(&n, &size)
	if err != nil {
		return err
	}
	if !d.Fits(n, size) {
		return nil
	}
	_, err = tx.Exec(ctx, `UPDATE checkpoints SET kind = 'delta', codec = $1, base_iteration = $2, body = $3, state = ''
		WHERE tenant_id = $4 AND session_id = $5 AND iteration = $6 AND sha256 = $7 AND kind = 'full'`,
		d.Codec, base, d.Body, tenant, sessionID, d.Iteration, d.SHA256)
	return err
}
