package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// ckReadTxPG runs fn in a read-only transaction of one snapshot: a delta is
// rebuilt from other rows, which a write committing between two statements
// of a READ COMMITTED read could change (prune, or turn the latest into a
// delta).
func (s *Store) ckReadTxPG(ctx context.Context, fn func(pgx.Tx) error) error {
	return mapErr(pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn))
}

// GetCheckpoint returns a session's checkpoint at iteration, or its latest when
// iteration is 0. Errors: KindNotFound, corrupted.
func (s *Store) GetCheckpoint(ctx context.Context, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	var c model.Checkpoint
	err := s.ckReadTxPG(ctx, func(tx pgx.Tx) error {
		var err error
		c, err = getCheckpointPG(ctx, tx, tenant, sessionID, iteration)
		return err
	})
	return c, err // a corrupted one as far as it could be rebuilt, as on SQLite
}

// ListCheckpoints returns a session's checkpoints, newest first. A damaged one
// fails the page (corrupted), naming it.
func (s *Store) ListCheckpoints(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Checkpoint], error) {
	q := repo.Fingerprint("checkpoints", sessionID)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	limit := p.Clamp()
	cond, args := "", []any{tenant, sessionID, limit + 1, int64(model.Now())}
	if hasCur {
		cond, args = " AND iteration < $5", append(args, cur.N)
	}
	var out []model.Checkpoint
	err = s.ckReadTxPG(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 AND `+notExpiredPG("$4")+
			cond+` ORDER BY iteration DESC LIMIT $3`, args...)
		if err != nil {
			return err
		}
		stored, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ckstate.Row, error) { return scanCkRowPG(r) })
		if err != nil {
			return err
		}
		rd := newCkReaderPG(ctx, tx, tenant, sessionID)
		out = make([]model.Checkpoint, len(stored))
		for i, row := range stored {
			if out[i], err = rd.Read(row); err != nil {
				return err
			}
		}
		if len(out) == 0 {
			_, err = ckSessionPG(ctx, tx, tenant, sessionID, false)
		}
		return err
	})
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	return repo.NewPage(out, limit, func(last model.Checkpoint) repo.Cursor { return repo.Cursor{Q: q, N: last.Iteration} }), nil
}
