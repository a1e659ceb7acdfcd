package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// DefaultCheckpointKeep is how many checkpoints a namespace keeps when no
// policy says otherwise; older ones are pruned by the writer as new ones
// arrive.
const DefaultCheckpointKeep = ckstate.DefaultKeep

// PutCheckpoint records a runtime's state after an iteration. The iteration must
// be above the latest of its namespace, and ExpectedIteration, when given, must
// be that latest: two workers resuming one session cannot both write
// (stale_iteration). The writer then applies the session's retention policy
// (def when it has none). Errors: KindNotFound, stale_iteration,
// checkpoint_exists.
func (s *Store) PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error) {
	w, err := ckstate.PutWrite(in)
	if err != nil {
		return model.Checkpoint{}, err
	}
	c, _, err := s.writeCheckpoint(ctx, tenant, sessionID, w, def)
	return c, err
}

// PatchCheckpoint records iteration in.Iteration as the latest checkpoint's state
// with in.StatePatch applied (RFC 7396), under PutCheckpoint's fence and rules:
// what it stores and answers is what a PUT of the merged state would. Errors:
// KindNotFound, stale_iteration, no_checkpoint (nothing to patch yet), corrupted
// (the latest cannot be read), KindInvalid (the patch, or the state it makes,
// named under state_patch).
func (s *Store) PatchCheckpoint(ctx context.Context, tenant, sessionID string, in model.PatchCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error) {
	w, err := ckstate.PatchWrite(in)
	if err != nil {
		return model.Checkpoint{}, err
	}
	c, _, err := s.writeCheckpoint(ctx, tenant, sessionID, w, def)
	return c, err
}

// CreateCheckpoint records the next checkpoint of a namespace, numbered by the
// server, under the parent it names (ckstore.Write). created is false when
// the client id was already stored with the same content: nothing is written.
// Errors: KindNotFound, stale_iteration, no_parent, checkpoint_exists,
// corrupted, KindInvalid.
func (s *Store) CreateCheckpoint(ctx context.Context, tenant, sessionID string, in model.CreateCheckpoint, def model.CheckpointRetention) (model.Checkpoint, bool, error) {
	w, err := ckstate.GraphWrite(in)
	if err != nil {
		return model.Checkpoint{}, false, err
	}
	return s.writeCheckpoint(ctx, tenant, sessionID, w, def)
}

// writeCheckpoint plans a write on the read pool, then hands it to the writer,
// which plans again, inside, only if another write got there in between.
func (s *Store) writeCheckpoint(ctx context.Context, tenant, sessionID string, w ckstate.Write, def model.CheckpointRetention) (c model.Checkpoint, created bool, err error) {
	planned, err := s.planCheckpoint(ctx, tenant, sessionID, w)
	if err != nil {
		return c, false, err
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.crashPoint(repo.PointCheckpointWrite); err != nil {
			return err
		}
		var err error
		c, created, err = ckstore.Write(ctx, &ckTx{ckRows{tx, tenant, sessionID}, s, tx}, sessionID, w, planned, def,
			func() string { return newID(model.PrefixCheckpoint) })
		return err
	})
	return c, created, err
}

// planCheckpoint works a write out on the read pool, in one snapshot.
func (s *Store) planCheckpoint(ctx context.Context, tenant, sessionID string, w ckstate.Write) (ckstate.Plan, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return ckstate.Plan{}, mapErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	return ckstore.Plan(ctx, ckRows{tx, tenant, sessionID}, sessionID, w)
}

// GetCheckpoint returns a session's checkpoint at iteration of namespace "",
// or its latest when iteration is 0. Errors: KindNotFound, corrupted.
func (s *Store) GetCheckpoint(ctx context.Context, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	return s.ReadCheckpoint(ctx, tenant, sessionID, model.CheckpointSelector{Iteration: iteration})
}

// ReadCheckpoint returns the checkpoint sel names, with its pending writes
// (ckstore.Get). Errors: KindNotFound, corrupted.
func (s *Store) ReadCheckpoint(ctx context.Context, tenant, sessionID string, sel model.CheckpointSelector) (model.Checkpoint, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Checkpoint{}, mapErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	return ckstore.Get(ctx, ckRows{tx, tenant, sessionID}, sel)
}

// ckTx is a checkpoint write inside the writer's transaction.
type ckTx struct {
	ckRows
	s  *Store
	tx *sql.Tx
}

func (t *ckTx) Session(ctx context.Context, create bool) (int64, *model.CheckpointRetention, error) {
	ses, err := getSession(ctx, t.tx, t.tenant, t.session)
	if model.IsNotFound(err, "session") && create {
		if !model.ValidClientID(t.session) {
			return 0, nil, model.Invalid(model.FieldError{Field: "create_session",
				Message: "the session id must be 1 to 128 characters of A-Z a-z 0-9 _ . : - to be created"})
		}
		switch _, cerr := t.s.createSessionTx(ctx, t.tx, t.tenant, model.CreateSession{ID: t.session}); {
		case cerr == nil:
			return 0, nil, nil
		case model.AsError(cerr).Kind != model.KindConflict:
			return 0, nil, cerr
		} // it exists, past its expires_at: not found, as to every write
	}
	if err != nil {
		return 0, nil, err
	}
	policy, err := sessionRetention(ctx, t.tx, t.tenant, t.session)
	return ses.LastSeq, policy, err
}

func (t *ckTx) Insert(ctx context.Context, c model.Checkpoint, st ckstate.Stored) error {
	return insertCheckpoint(ctx, t.tx, t.tenant, c, st)
}

func (t *ckTx) KeepAsDelta(ctx context.Context, ns string, d *ckstate.Delta, base int64) error {
	return keepAsDelta(ctx, t.tx, t.tenant, t.session, ns, d, base)
}

func (t *ckTx) SetPause(ctx context.Context, pause *int64) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE sessions SET pause_until = ? WHERE tenant_id = ? AND id = ?`, pause, t.tenant, t.session)
	return err
}

func (t *ckTx) Created(ctx context.Context, c model.Checkpoint) error {
	return t.s.recordEvent(ctx, t.tx, t.tenant, t.session, model.EventCheckpointCreated, repo.CheckpointEventData(c))
}

func (t *ckTx) NthNewest(ctx context.Context, ns string, n int64) (int64, bool, error) {
	return t.iteration(ctx, `SELECT iteration FROM checkpoints WHERE tenant_id = ? AND session_id = ? AND namespace = ?
		ORDER BY iteration DESC LIMIT 1 OFFSET ?`, t.tenant, t.session, ns, n)
}

func (t *ckTx) NewestBefore(ctx context.Context, ns string, before model.Time) (int64, bool, error) {
	return t.iteration(ctx, `SELECT iteration FROM checkpoints WHERE tenant_id = ? AND session_id = ? AND namespace = ?
		AND created_at < ? ORDER BY iteration DESC LIMIT 1`, t.tenant, t.session, ns, int64(before))
}

func (t *ckTx) iteration(ctx context.Context, query string, args ...any) (int64, bool, error) {
	var it int64
	err := t.tx.QueryRowContext(ctx, query, args...).Scan(&it)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	return it, err == nil, err
}

func (t *ckTx) Drop(ctx context.Context, ns string, upto int64) error {
	_, err := dropCheckpoints(ctx, t.tx, t.tenant, t.session, ns, `iteration <= ?`, upto)
	return err
}

// PutCheckpointWrites records one task's writes against a checkpoint
// (ckstore.PutWrites). Errors: KindNotFound.
func (s *Store) PutCheckpointWrites(ctx context.Context, tenant, sessionID string, in model.PutCheckpointWrites) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return ckstore.PutWrites(ctx, &ckTx{ckRows{tx, tenant, sessionID}, s, tx}, in)
	})
}

func (t *ckTx) PutWrite(ctx context.Context, ns, checkpointID string, w model.PendingWrite, replace bool) error {
	conflict := `DO NOTHING`
	if replace {
		conflict = `DO UPDATE SET channel = excluded.channel, value = excluded.value, task_path = excluded.task_path,
			created_at = excluded.created_at`
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO checkpoint_writes (tenant_id, session_id, namespace, checkpoint_id, task_id, idx,
		channel, task_path, value, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, session_id, namespace, checkpoint_id, task_id, idx) `+conflict,
		t.tenant, t.session, ns, checkpointID, w.TaskID, w.Idx, w.Channel, w.TaskPath, string(w.Value), int64(model.Now()))
	return err
}
