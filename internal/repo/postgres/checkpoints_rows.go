package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// Checkpoint rows are kept as SQLite keeps them (ckstate: the latest full,
// older ones as reverse deltas), so that exports of the two agree byte for
// byte; what they mean is ckstore's.

const ckColumnsPG = `id, session_id, namespace, iteration, client_id, parent_id, parent_iteration, metadata,
	state, last_seq, sha256, created_at, kind, codec, base_iteration, body`

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
		meta    string
	)
	err := row.Scan(&r.ID, &r.SessionID, &r.Namespace, &r.Iteration, &r.ClientID, &r.ParentID, &r.ParentIteration, &meta,
		&r.Text, &r.LastSeq, &r.SHA256, &created, &r.Kind, &r.Codec, &base, &r.Body)
	r.CreatedAt = model.Time(created)
	r.Metadata = model.Object(meta)
	if base != nil {
		r.BaseIteration = *base
	}
	return r, err
}

// ckRowsPG reads one session's checkpoint rows through q, which should be one
// snapshot (a repeatable-read transaction, or the writing one). Its lookups
// find nothing of a session past its expires_at.
type ckRowsPG struct {
	q               ckQuerierPG
	tenant, session string
}

var _ ckstore.Reads = ckRowsPG{}

func (r ckRowsPG) one(ctx context.Context, cond string, args ...any) (ckstate.Row, error) {
	row, err := scanCkRowPG(r.q.QueryRow(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints
		WHERE tenant_id = $1 AND session_id = $2 AND `+notExpiredPG("$3")+` AND namespace = $4 AND `+cond,
		append([]any{r.tenant, r.session, int64(model.Now())}, args...)...))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return row, ckstate.ErrNoRow
	case err != nil:
		return row, mapErr(err)
	}
	return row, nil
}

func (r ckRowsPG) Row(ctx context.Context, ns string, it int64) (ckstate.Row, error) {
	return r.one(ctx, `iteration = $5`, ns, it)
}

func (r ckRowsPG) Latest(ctx context.Context, ns string) (ckstate.Row, error) {
	return r.one(ctx, `TRUE ORDER BY iteration DESC LIMIT 1`, ns)
}

func (r ckRowsPG) ByClientID(ctx context.Context, ns, id string) (ckstate.Row, error) {
	return r.one(ctx, `client_id = $5`, ns, id)
}

func (r ckRowsPG) Session(ctx context.Context) error {
	_, err := ckSessionPG(ctx, r.q, r.tenant, r.session, false)
	return err
}

func (r ckRowsPG) Writes(ctx context.Context, ns, id, channel string) ([]model.PendingWrite, error) {
	rows, err := r.q.Query(ctx, `SELECT task_id, idx, channel, value, task_path FROM checkpoint_writes
		WHERE tenant_id = $1 AND session_id = $2 AND namespace = $3 AND checkpoint_id = $4 AND ($5 = '' OR channel = $5)`,
		r.tenant, r.session, ns, id, channel)
	if err != nil {
		return nil, mapErr(err)
	}
	ws, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.PendingWrite, error) {
		var (
			w model.PendingWrite
			v string
		)
		err := row.Scan(&w.TaskID, &w.Idx, &w.Channel, &v, &w.TaskPath)
		w.Value = model.JSON(v)
		return w, err
	})
	return ws, mapErr(err)
}

// newCkReaderPG rebuilds a session's checkpoint states of namespace ns as q
// sees them.
func newCkReaderPG(ctx context.Context, q ckQuerierPG, tenant, sessionID, ns string) *ckstate.Reader {
	return ckstore.NewReader(ctx, ckRowsPG{q, tenant, sessionID}, ns)
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

// getCheckpointPG returns a session's checkpoint at iteration of namespace
// "", or its latest when iteration is 0, as ckstore.Get reads it. Errors:
// KindNotFound, corrupted (with the checkpoint as far as it could be rebuilt).
func getCheckpointPG(ctx context.Context, q ckQuerierPG, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	return ckstore.Get(ctx, ckRowsPG{q, tenant, sessionID}, model.CheckpointSelector{Iteration: iteration})
}

// ckBodyPG is a row's body as a parameter: NULL when nil, which says "the
// state is in the state column".
func ckBodyPG(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
