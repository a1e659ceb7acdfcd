package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// How a checkpoint row keeps its state (migration 00007) is ckstate's: the
// latest full, older ones as reverse deltas, bodies zstd-compressed. What the
// rows mean (namespaces, parents, pending writes, retention) is ckstore's.
// This file reads those rows.

const checkpointColumns = `id, session_id, namespace, iteration, client_id, parent_id, parent_iteration, metadata,
	state, last_seq, sha256, created_at, kind, codec, base_iteration, body`

// ckRow is one checkpoint row as stored.
type ckRow = ckstate.Row

func scanCkRow(sc scanner) (ckRow, error) {
	var (
		r    ckRow
		base sql.NullInt64
		meta string
	)
	err := sc.Scan(&r.ID, &r.SessionID, &r.Namespace, &r.Iteration, &r.ClientID, &r.ParentID, &r.ParentIteration, &meta,
		&r.Text, &r.LastSeq, &r.SHA256, &r.CreatedAt, &r.Kind, &r.Codec, &base, &r.Body)
	r.BaseIteration = base.Int64
	r.Metadata = model.Object(meta)
	return r, err
}

// ckRows reads one session's checkpoint rows through q, which should be a
// transaction: a delta is rebuilt from other rows of the same snapshot. Its
// lookups find nothing of a session past its expires_at.
type ckRows struct {
	q               querier
	tenant, session string
}

// ckstore.Reads and ckstore.Rows
var _ ckstore.Reads = ckRows{}

func (r ckRows) one(ctx context.Context, cond string, args ...any) (ckRow, error) {
	row, err := scanCkRow(r.q.QueryRowContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints
		WHERE tenant_id = ? AND session_id = ? AND `+notExpired+` AND namespace = ? AND `+cond,
		append([]any{r.tenant, r.session, r.tenant, r.session, int64(model.Now())}, args...)...))
	switch {
	case err == sql.ErrNoRows:
		return row, ckstate.ErrNoRow
	case err != nil:
		return row, mapErr(err)
	}
	return row, nil
}

func (r ckRows) Row(ctx context.Context, ns string, it int64) (ckRow, error) {
	return r.one(ctx, `iteration = ?`, ns, it)
}

func (r ckRows) Latest(ctx context.Context, ns string) (ckRow, error) {
	return r.one(ctx, `1 ORDER BY iteration DESC LIMIT 1`, ns)
}

func (r ckRows) ByClientID(ctx context.Context, ns, id string) (ckRow, error) {
	return r.one(ctx, `client_id = ?`, ns, id)
}

func (r ckRows) Session(ctx context.Context) error {
	_, err := getSession(ctx, r.q, r.tenant, r.session)
	return err
}

func (r ckRows) Writes(ctx context.Context, ns, id, channel string) ([]model.PendingWrite, error) {
	rows, err := r.q.QueryContext(ctx, `SELECT task_id, idx, channel, value, task_path FROM checkpoint_writes
		WHERE tenant_id = ? AND session_id = ? AND namespace = ? AND checkpoint_id = ? AND (? = '' OR channel = ?)`,
		r.tenant, r.session, ns, id, channel, channel)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, func(sc scanner) (model.PendingWrite, error) {
		var (
			w model.PendingWrite
			v string
		)
		err := sc.Scan(&w.TaskID, &w.Idx, &w.Channel, &v, &w.TaskPath)
		w.Value = model.JSON(v)
		return w, err
	})
}

// getCheckpoint returns a session's checkpoint at iteration of namespace "",
// or its latest when iteration is 0, read as ckstore.Get does. q should be a
// transaction. Errors: KindNotFound, corrupted (with the checkpoint as far as
// it could be rebuilt).
func getCheckpoint(ctx context.Context, q querier, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	return ckstore.Get(ctx, ckRows{q, tenant, sessionID}, model.CheckpointSelector{Iteration: iteration})
}

// isCorrupted reports a read that found damage rather than failed.
func isCorrupted(err error) bool { return ckstate.IsCorrupted(err) }

// The names the package's tests know ckstate's parts by.
var (
	canonicalJSON  = ckstate.Canonical
	decodeTree     = ckstate.DecodeTree
	checkpointHash = ckstate.Hash
	encodeBody     = ckstate.EncodeBody
	decodeBody     = ckstate.DecodeBody
	mergeDiff      = ckstate.MergeDiff
)

const (
	codecZstd     = ckstate.CodecZstd
	compressAbove = ckstate.CompressAbove
	snapshotEvery = ckstate.SnapshotEvery
	deltaAbove    = ckstate.DeltaAbove
)
