package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// DefaultCheckpointKeep is how many checkpoints a session keeps; older ones are
// pruned by the writer as new ones arrive.
const DefaultCheckpointKeep = ckstate.DefaultKeep

// PutCheckpoint records a runtime's state after an iteration. The iteration must
// be above the latest, and ExpectedIteration, when given, must be the latest: two
// workers resuming one session cannot both write (stale_iteration). The writer
// keeps the newest keep checkpoints of the session. Errors: KindNotFound,
// stale_iteration.
func (s *Store) PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, keep int) (model.Checkpoint, error) {
	w, err := ckstate.PutWrite(in)
	if err != nil {
		return model.Checkpoint{}, err
	}
	return s.writeCheckpoint(ctx, tenant, sessionID, w, keep)
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
	return s.writeCheckpoint(ctx, tenant, sessionID, w, keep)
}

// planCheckpoint works a write out against the session's latest checkpoint as
// q sees it (ckstate.Plan).
func planCheckpoint(ctx context.Context, q querier, tenant, sessionID string, w ckstate.Write) (ckstate.Plan, error) {
	latest, err := loadBase(ctx, q, tenant, sessionID, w.Patch != nil)
	if err != nil {
		return ckstate.Plan{}, err
	}
	return ckstate.PlanWrite(sessionID, w, latest)
}

// writeCheckpoint plans a write on the read pool, then hands it to the writer,
// which plans again, inside, only if another write got there in between.
func (s *Store) writeCheckpoint(ctx context.Context, tenant, sessionID string, w ckstate.Write, keep int) (model.Checkpoint, error) {
	if keep <= 0 {
		keep = DefaultCheckpointKeep
	}
	planned, err := planCheckpoint(ctx, s.rdb, tenant, sessionID, w)
	if err != nil {
		return model.Checkpoint{}, err
	}
	c := model.Checkpoint{ID: newID(model.PrefixCheckpoint), SessionID: sessionID, Iteration: w.Iteration, CreatedAt: model.Now()}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.crashPoint(repo.PointCheckpointWrite); err != nil {
			return err
		}
		ses, err := getSession(ctx, tx, tenant, sessionID)
		if err != nil {
			return err
		}
		var latest int64
		var latestSHA string
		err = tx.QueryRowContext(ctx, `SELECT iteration, sha256 FROM checkpoints WHERE tenant_id = ? AND session_id = ?
			ORDER BY iteration DESC LIMIT 1`, tenant, sessionID).Scan(&latest, &latestSHA)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if err := ckstate.Fence(w, latest); err != nil {
			return err
		}
		p := planned
		if p.Stale(latest, latestSHA) {
			if p, err = planCheckpoint(ctx, tx, tenant, sessionID, w); err != nil {
				return err
			}
		}
		if p.Err != nil {
			return p.Err
		}
		c.State = p.Canonical
		c.LastSeq = ses.LastSeq
		c.SHA256 = ckstate.Hash(c.Iteration, c.LastSeq, c.State)
		if err := insertCheckpoint(ctx, tx, tenant, c, p.Stored); err != nil {
			return err
		}
		if err := keepAsDelta(ctx, tx, tenant, sessionID, p.Delta, c.Iteration); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET pause_until = ? WHERE tenant_id = ? AND id = ?`,
			p.Pause, tenant, sessionID); err != nil {
			return err
		}
		if err := s.recordEvent(ctx, tx, tenant, sessionID, model.EventCheckpointCreated, repo.CheckpointEventData(c)); err != nil {
			return err
		}
		return pruneCheckpoints(ctx, tx, tenant, sessionID, keep)
	})
	return c, err
}

// GetCheckpoint returns a session's checkpoint at iteration, or its latest when
// iteration is 0. Errors: KindNotFound, corrupted.
func (s *Store) GetCheckpoint(ctx context.Context, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Checkpoint{}, mapErr(err)
	}
	defer tx.Rollback() // read-only: nothing to undo
	return getCheckpoint(ctx, tx, tenant, sessionID, iteration)
}

// ListCheckpoints returns a session's checkpoints, newest first. A damaged one
// fails the page (corrupted), naming it.
func (s *Store) ListCheckpoints(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Checkpoint], error) {
	q := repo.Fingerprint("checkpoints", sessionID)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	cond, args := "", []any{tenant, sessionID, tenant, sessionID, int64(model.Now())}
	if hasCur {
		cond, args = " AND iteration < ?", append(args, cur.N)
	}
	limit := p.Clamp()
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Page[model.Checkpoint]{}, mapErr(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints WHERE tenant_id = ? AND session_id = ? AND `+notExpired+
		cond+` ORDER BY iteration DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.Checkpoint]{}, mapErr(err)
	}
	stored, err := collect(rows, scanCkRow)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	rd := newCkReader(ctx, tx, tenant, sessionID)
	out := make([]model.Checkpoint, len(stored))
	for i, row := range stored {
		if out[i], err = rd.Read(row); err != nil {
			return model.Page[model.Checkpoint]{}, err
		}
	}
	if len(out) == 0 {
		if _, err := getSession(ctx, tx, tenant, sessionID); err != nil {
			return model.Page[model.Checkpoint]{}, err
		}
	}
	return repo.NewPage(out, limit, func(last model.Checkpoint) repo.Cursor { return repo.Cursor{Q: q, N: last.Iteration} }), nil
}
