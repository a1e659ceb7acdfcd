package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// How a checkpoint row keeps its state (migration 00007) is ckstate's: the
// latest full, older ones as reverse deltas, bodies zstd-compressed. This file
// reads those rows.

const checkpointColumns = `id, session_id, iteration, state, last_seq, sha256, created_at, kind, codec, base_iteration, body`

// ckRow is one checkpoint row as stored.
type ckRow = ckstate.Row

func scanCkRow(sc scanner) (ckRow, error) {
	var (
		r    ckRow
		base sql.NullInt64
	)
	err := sc.Scan(&r.ID, &r.SessionID, &r.Iteration, &r.Text, &r.LastSeq, &r.SHA256, &r.CreatedAt,
		&r.Kind, &r.Codec, &base, &r.Body)
	r.BaseIteration = base.Int64
	return r, err
}

// newCkReader rebuilds the states of one session's checkpoints as q sees
// them; q should be a transaction, so that a row and the rows it leans on are
// one snapshot.
func newCkReader(ctx context.Context, q querier, tenant, session string) *ckstate.Reader {
	return ckstate.NewReader(func(iteration int64) (ckRow, error) {
		row, err := scanCkRow(q.QueryRowContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints
			WHERE tenant_id = ? AND session_id = ? AND iteration = ?`, tenant, session, iteration))
		switch {
		case err == sql.ErrNoRows:
			return row, ckstate.ErrNoRow
		case err != nil:
			return row, mapErr(err)
		}
		return row, nil
	})
}

// getCheckpoint returns a session's checkpoint at iteration, or its latest when
// iteration is 0, read as ckstate.Reader does. q should be a transaction: a
// delta is rebuilt from other rows. Errors: KindNotFound, corrupted (with the
// checkpoint as far as it could be rebuilt).
func getCheckpoint(ctx context.Context, q querier, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	query := `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE tenant_id = ? AND session_id = ? AND ` + notExpired
	args := []any{tenant, sessionID, tenant, sessionID, int64(model.Now())}
	if iteration > 0 {
		query, args = query+` AND iteration = ?`, append(args, iteration)
	}
	row, err := scanCkRow(q.QueryRowContext(ctx, query+` ORDER BY iteration DESC LIMIT 1`, args...))
	if err == sql.ErrNoRows {
		if _, err := getSession(ctx, q, tenant, sessionID); err != nil {
			return model.Checkpoint{}, err
		}
		what := "latest"
		if iteration > 0 {
			what = "iteration " + itoa(iteration)
		}
		return model.Checkpoint{}, model.NotFound("checkpoint", what)
	}
	if err != nil {
		return model.Checkpoint{}, mapErr(err)
	}
	return newCkReader(ctx, q, tenant, sessionID).Read(row)
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
