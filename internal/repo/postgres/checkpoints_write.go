package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// PutCheckpoint records a runtime's state after an iteration, under the fence
// of its namespace (ckstore.Write): two workers resuming one session, in one
// process or several, cannot both write (stale_iteration). Errors:
// KindNotFound, stale_iteration, checkpoint_exists.
func (s *Store) PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error) {
	w, err := ckstate.PutWrite(in)
	if err != nil {
		return model.Checkpoint{}, err
	}
	c, _, err := s.writeCheckpointPG(ctx, tenant, sessionID, w, def)
	return c, err
}

// PatchCheckpoint records iteration in.Iteration as the latest checkpoint's state
// with in.StatePatch applied (RFC 7396), under PutCheckpoint's fence and rules.
// Errors: KindNotFound, stale_iteration, no_checkpoint, corrupted, KindInvalid.
func (s *Store) PatchCheckpoint(ctx context.Context, tenant, sessionID string, in model.PatchCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error) {
	w, err := ckstate.PatchWrite(in)
	if err != nil {
		return model.Checkpoint{}, err
	}
	c, _, err := s.writeCheckpointPG(ctx, tenant, sessionID, w, def)
	return c, err
}

// CreateCheckpoint records the next checkpoint of a namespace, numbered by the
// server, under the parent it names (ckstore.Write). Errors: KindNotFound,
// stale_iteration, no_parent, checkpoint_exists, corrupted, KindInvalid.
func (s *Store) CreateCheckpoint(ctx context.Context, tenant, sessionID string, in model.CreateCheckpoint, def model.CheckpointRetention) (model.Checkpoint, bool, error) {
	w, err := ckstate.GraphWrite(in)
	if err != nil {
		return model.Checkpoint{}, false, err
	}
	return s.writeCheckpointPG(ctx, tenant, sessionID, w, def)
}

// writeCheckpointPG plans a write outside the transaction, so that the JSON
// work of a large state is not done holding the session's lock; inside, once
// the lock is held, it plans again only if another write got there between.
func (s *Store) writeCheckpointPG(ctx context.Context, tenant, sessionID string, w ckstate.Write, def model.CheckpointRetention) (c model.Checkpoint, created bool, err error) {
	var planned ckstate.Plan
	err = s.ckReadTxPG(ctx, func(tx pgx.Tx) error {
		var err error
		planned, err = ckstore.Plan(ctx, ckRowsPG{tx, tenant, sessionID}, sessionID, w)
		return err
	})
	if err != nil {
		return c, false, err
	}
	var crashAfter bool
	err = s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if crashAfter, err = ckFaultPG(s.faults); err != nil {
			return err
		}
		c, created, err = ckstore.Write(ctx, &ckTxPG{ckRowsPG{tx, tenant, sessionID}, tx}, sessionID, w, planned, def,
			func() string { return newID(model.PrefixCheckpoint) })
		return err
	})
	if err == nil && crashAfter {
		err = model.Unavailable(fmt.Errorf("%w: %s at %s", repo.ErrInjected, repo.FaultCrashAfterCommit, repo.PointCheckpointWrite))
	}
	return c, created, err
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

// ckTxPG is a checkpoint write inside its transaction.
type ckTxPG struct {
	ckRowsPG
	tx pgx.Tx
}

func (t *ckTxPG) Session(ctx context.Context, create bool) (int64, *model.CheckpointRetention, error) {
	// An id no client could choose (a stored form in a user's space) is
	// never made, but names a session that exists as any id does.
	if create && model.ValidClientID(t.session) {
		now := model.Now()
		ses := model.Session{ID: t.session, Status: model.StatusCreated, Metadata: model.Object("{}"), CreatedAt: now, UpdatedAt: now}
		tag, err := t.tx.Exec(ctx, `INSERT INTO sessions (tenant_id, id, status, metadata, created_at, updated_at)
			VALUES ($1, $2, $3, '{}', $4, $4) ON CONFLICT DO NOTHING`, t.tenant, t.session, string(ses.Status), int64(now))
		if err != nil {
			return 0, nil, err
		}
		if tag.RowsAffected() == 1 {
			if err := recordEventPG(ctx, t.tx, t.tenant, t.session, model.EventSessionCreated, repo.SessionEventData(ses)); err != nil {
				return 0, nil, err
			}
		}
	}
	lastSeq, err := ckSessionPG(ctx, t.tx, t.tenant, t.session, true)
	if create && model.IsNotFound(err, "session") && !model.ValidClientID(t.session) {
		return 0, nil, model.Invalid(model.FieldError{Field: "create_session",
			Message: "the session id must be 1 to 128 characters of A-Z a-z 0-9 _ . : - to be created"})
	}
	if err != nil {
		return 0, nil, err
	}
	policy, err := sessionRetentionPG(ctx, t.tx, t.tenant, t.session)
	return lastSeq, policy, err
}

func (t *ckTxPG) Insert(ctx context.Context, c model.Checkpoint, st ckstate.Stored) error {
	return insertCheckpointPG(ctx, t.tx, t.tenant, c, st)
}

func (t *ckTxPG) KeepAsDelta(ctx context.Context, ns string, d *ckstate.Delta, base int64) error {
	return keepAsDeltaPG(ctx, t.tx, t.tenant, t.session, ns, d, base)
}

func (t *ckTxPG) SetPause(ctx context.Context, pause *int64) error {
	_, err := t.tx.Exec(ctx, `UPDATE sessions SET pause_until = $1 WHERE tenant_id = $2 AND id = $3`, pause, t.tenant, t.session)
	return err
}

func (t *ckTxPG) Created(ctx context.Context, c model.Checkpoint) error {
	return recordEventPG(ctx, t.tx, t.tenant, t.session, model.EventCheckpointCreated, repo.CheckpointEventData(c))
}

func (t *ckTxPG) NthNewest(ctx context.Context, ns string, n int64) (int64, bool, error) {
	return t.iteration(ctx, `SELECT iteration FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 AND namespace = $3
		ORDER BY iteration DESC LIMIT 1 OFFSET $4`, t.tenant, t.session, ns, n)
}

func (t *ckTxPG) NewestBefore(ctx context.Context, ns string, before model.Time) (int64, bool, error) {
	return t.iteration(ctx, `SELECT iteration FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 AND namespace = $3
		AND created_at < $4 ORDER BY iteration DESC LIMIT 1`, t.tenant, t.session, ns, int64(before))
}

func (t *ckTxPG) iteration(ctx context.Context, query string, args ...any) (int64, bool, error) {
	var it int64
	err := t.tx.QueryRow(ctx, query, args...).Scan(&it)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return it, err == nil, err
}

func (t *ckTxPG) Drop(ctx context.Context, ns string, upto int64) error {
	_, err := dropCheckpointsPG(ctx, t.tx, t.tenant, t.session, ns, `iteration <= $4`, upto)
	return err
}

func (t *ckTxPG) PutWrite(ctx context.Context, ns, checkpointID string, w model.PendingWrite, replace bool) error {
	conflict := `DO NOTHING`
	if replace {
		conflict = `DO UPDATE SET channel = excluded.channel, value = excluded.value, task_path = excluded.task_path,
			created_at = excluded.created_at`
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO checkpoint_writes (tenant_id, session_id, namespace, checkpoint_id, task_id, idx,
		channel, task_path, value, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (tenant_id, session_id, namespace, checkpoint_id, task_id, idx) `+conflict,
		t.tenant, t.session, ns, checkpointID, w.TaskID, w.Idx, w.Channel, w.TaskPath, string(w.Value), int64(model.Now()))
	return err
}

// PutCheckpointWrites records one task's writes against a checkpoint
// (ckstore.PutWrites). Errors: KindNotFound.
func (s *Store) PutCheckpointWrites(ctx context.Context, tenant, sessionID string, in model.PutCheckpointWrites) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		return ckstore.PutWrites(ctx, &ckTxPG{ckRowsPG{tx, tenant, sessionID}, tx}, in)
	})
}

// insertCheckpointPG writes c as a full row.
func insertCheckpointPG(ctx context.Context, tx pgx.Tx, tenant string, c model.Checkpoint, st ckstate.Stored) error {
	_, err := tx.Exec(ctx, `INSERT INTO checkpoints (tenant_id, session_id, namespace, iteration, id, client_id,
		parent_id, parent_iteration, metadata, state, last_seq, sha256, created_at, codec, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		tenant, c.SessionID, c.Namespace, c.Iteration, c.ID, c.ClientID, c.ParentID, c.ParentIteration, c.Metadata.String(),
		st.Text, c.LastSeq, c.SHA256, int64(c.CreatedAt), st.Codec, ckBodyPG(st.Body))
	return err
}

// keepAsDeltaPG rewrites d's row as a delta from base (the iteration just
// written) when it fits the run of deltas under it (ckstate.Delta.Fits). The
// row must still be the full one the patch was computed from.
func keepAsDeltaPG(ctx context.Context, tx pgx.Tx, tenant, sessionID, ns string, d *ckstate.Delta, base int64) error {
	if d == nil {
		return nil
	}
	var n, size int64
	err := tx.QueryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(length(body)), 0)::bigint FROM checkpoints
		WHERE tenant_id = $1 AND session_id = $2 AND namespace = $4 AND iteration < $3 AND iteration > COALESCE((
			SELECT MAX(iteration) FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 AND namespace = $4
			AND iteration < $3 AND kind = 'full'), 0)`,
		tenant, sessionID, d.Iteration, ns).Scan(&n, &size)
	if err != nil {
		return err
	}
	if !d.Fits(n, size) {
		return nil
	}
	_, err = tx.Exec(ctx, `UPDATE checkpoints SET kind = 'delta', codec = $1, base_iteration = $2, body = $3, state = ''
		WHERE tenant_id = $4 AND session_id = $5 AND namespace = $6 AND iteration = $7 AND sha256 = $8 AND kind = 'full'`,
		d.Codec, base, d.Body, tenant, sessionID, ns, d.Iteration, d.SHA256)
	return err
}
