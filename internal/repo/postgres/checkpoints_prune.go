package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/repo/ckstate"
)

// deleteCheckpointsAfterSeqPG deletes a session's checkpoints written after
// its message seq, in every namespace, for a rewind, and returns the
// iterations it deleted of namespace "", oldest first.
func deleteCheckpointsAfterSeqPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string, seq int64) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT namespace FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 AND last_seq > $3`,
		tenant, sessionID, seq)
	if err != nil {
		return nil, err
	}
	namespaces, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, ns := range namespaces {
		gone, err := dropCheckpointsPG(ctx, tx, tenant, sessionID, ns, `last_seq > $4`, seq)
		if err != nil {
			return nil, err
		}
		if ns == "" {
			out = gone
		}
	}
	return out, nil
}

// dropCheckpointsPG deletes the checkpoints of a session's namespace that
// cond (a condition on a checkpoints row, its parameters numbered from $4,
// with args) selects, and their pending writes, and returns their
// iterations, oldest first. A remaining delta whose base is among them is
// first rewritten whole, from the rows as they still are, so that every
// remaining checkpoint reads as it did. One that cannot be rebuilt (it was
// damaged already) is left as it is: it reads as corrupted either way, and
// the write goes on.
func dropCheckpointsPG(ctx context.Context, tx pgx.Tx, tenant, sessionID, ns, cond string, args ...any) ([]int64, error) {
	where := `tenant_id = $1 AND session_id = $2 AND namespace = $3 AND (` + cond + `)`
	wargs := append([]any{tenant, sessionID, ns}, args...)
	rows, err := tx.Query(ctx, `SELECT iteration FROM checkpoints WHERE `+where+` ORDER BY iteration`, wargs...)
	if err != nil {
		return nil, err
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(gone) == 0 {
		return nil, err
	}

	rows, err = tx.Query(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints
		WHERE tenant_id = $1 AND session_id = $2 AND namespace = $3 AND kind = 'delta' AND NOT (`+cond+`)
		AND base_iteration IN (SELECT iteration FROM checkpoints WHERE `+where+`)`, wargs...)
	if err != nil {
		return nil, err
	}
	stranded, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ckstate.Row, error) { return scanCkRowPG(r) })
	if err != nil {
		return nil, err
	}
	rd := newCkReaderPG(ctx, tx, tenant, sessionID, ns)
	for _, row := range stranded {
		c, err := rd.Read(row)
		if ckstate.IsCorrupted(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		st := ckstate.EncodeFull(c.State)
		if _, err := tx.Exec(ctx, `UPDATE checkpoints SET kind = 'full', codec = $1, base_iteration = NULL, body = $2, state = $3
			WHERE tenant_id = $4 AND session_id = $5 AND namespace = $6 AND iteration = $7`,
			st.Codec, ckBodyPG(st.Body), st.Text, tenant, sessionID, ns, row.Iteration); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM checkpoint_writes WHERE tenant_id = $1 AND session_id = $2 AND namespace = $3
		AND checkpoint_id IN (SELECT client_id FROM checkpoints WHERE `+where+`)`, wargs...); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM checkpoints WHERE `+where, wargs...); err != nil {
		return nil, err
	}
	return gone, nil
}
