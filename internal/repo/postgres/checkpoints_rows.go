package postgres

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// Checkpoint rows are kept as SQLite keeps them (ckstate: the latest full,
// older ones as reverse deltas), so that exports of the two agree byte for byte.

const ckColumnsPG = `id, session_id, iteration, state, last_seq, sha256, created_at, kind, codec, base_iteration, body`

// ckQuerierPG is what checkpoint reads need: a transaction, or the pool for a
// read of the latest alone.
type ckQuerierPG interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func scanCkRowPG(row pgx.Row) (ckstate.Row, error) {
	var (
		r       ckstate.Row
		base    *int64
		created int64
	)
	err := row.Scan(&r.ID, &r.SessionID, &r.Iteration, &r.Text, &r.LastSeq, &r.SHA256, &created,
		&r.Kind, &r.Codec, &base, &r.Body)
	r.CreatedAt = model.Time(created)
	if base != nil {
		r.BaseIteration = *base
	}
	return r, err
}

// newCkReaderPG rebuilds a session's checkpoint states as q sees them; q
// should be one snapshot (a repeatable-read transaction, or the writing one),
// so that a row and the rows it leans on agree.
func newCkReaderPG(ctx context.Context, q ckQuerierPG, tenant, sessionID string) *ckstate.Reader {
	return ckstate.NewReader(func(iteration int64) (ckstate.Row, error) {
		row, err := scanCkRowPG(q.QueryRow(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints
			WHERE tenant_id = $1 AND session_id = $2 AND iteration = $3`, tenant, sessionID, iteration))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return row, ckstate.ErrNoRow
		case err != nil:
			return row, mapErr(err)
		}
		return row, nil
	})
}

// ckSessionPG returns the session's last_seq, locking its row when lock is
// set: checkpoint writes of every process serialise there, so the
// compare-and-set on the latest iteration holds across them. NO KEY UPDATE
// rather than UPDATE: it still excludes other writers of the row, but not the
// key-share locks of inserts that reference the session (appends). A
// session past its expires_at is not there. Errors: KindNotFound.
func ckSessionPG(ctx context.Context, q ckQuerierPG, tenant, sessionID string, lock bool) (int64, error) {
	query := `SELECT last_seq, expires_at FROM sessions WHERE tenant_id = $1 AND id = $2`
	if lock {
		query += ` FOR NO KEY UPDATE`
	}
	var (
		lastSeq   int64
		expiresAt *int64
	)
	err := q.QueryRow(ctx, query, tenant, sessionID).Scan(&lastSeq, &expiresAt)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && expiresAt != nil && *expiresAt <= int64(model.Now())) {
		return 0, model.NotFound("session", sessionID)
	}
	return lastSeq, mapErr(err)
}

// notExpiredPG is a condition for a read of a session's rows (checkpoints,
// compactions) over the tenant $1, the session $2 and now, the placeholder
// given: it fails once the session is past its expires_at, so that the read
// finds nothing and its check that the session exists answers KindNotFound,
// without a second query while the session is live.
func notExpiredPG(now string) string {
	return `NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = $1 AND x.id = $2 AND x.expires_at <= ` + now + `)`
}

// getCheckpointPG returns a session's checkpoint at iteration, or its latest
// when iteration is 0, rebuilt and checked (ckstate.Reader). Errors:
// KindNotFound, corrupted (with the checkpoint as far as it could be rebuilt).
func getCheckpointPG(ctx context.Context, q ckQuerierPG, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	query := `SELECT ` + ckColumnsPG + ` FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 AND ` + notExpiredPG("$3")
	args := []any{tenant, sessionID, int64(model.Now())}
	if iteration > 0 {
		query, args = query+` AND iteration = $4`, append(args, iteration)
	}
	row, err := scanCkRowPG(q.QueryRow(ctx, query+` ORDER BY iteration DESC LIMIT 1`, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := ckSessionPG(ctx, q, tenant, sessionID, false); err != nil {
			return model.Checkpoint{}, err
		}
		what := "latest"
		if iteration > 0 {
			what = "iteration " + strconv.FormatInt(iteration, 10)
		}
		return model.Checkpoint{}, model.NotFound("checkpoint", what)
	}
	if err != nil {
		return model.Checkpoint{}, mapErr(err)
	}
	return newCkReaderPG(ctx, q, tenant, sessionID).Read(row)
}

// ckLatestPG describes the session's latest checkpoint for a write
// (ckstate.LoadLatest; Found false when there is none).
func ckLatestPG(ctx context.Context, q ckQuerierPG, tenant, sessionID string, needTree bool) (ckstate.Latest, error) {
	row, err := scanCkRowPG(q.QueryRow(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints
		WHERE tenant_id = $1 AND session_id = $2 ORDER BY iteration DESC LIMIT 1`, tenant, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return ckstate.Latest{}, nil
	}
	if err != nil {
		return ckstate.Latest{}, mapErr(err)
	}
	return ckstate.LoadLatest(newCkReaderPG(ctx, q, tenant, sessionID), row, needTree)
}

// ckBodyPG is a row's body as a parameter: NULL when nil, which says "the
// state is in the state column".
func ckBodyPG(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
