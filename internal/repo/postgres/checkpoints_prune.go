package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/repo/ckstate"
)

// pruneCheckpointsPG keeps the newest keep checkpoints of a session. Deltas
// lean on newer rows only, so deleting the oldest strands none;
// dropCheckpointsPG checks all the same.
func pruneCheckpointsPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string, keep int) error {
	var cutoff int64
	err := tx.QueryRow(ctx, `SELECT iteration FROM checkpoints WHERE tenant_id = $1 AND session_id = $2
		ORDER BY iteration DESC LIMIT 1 OFFSET $3`, tenant, sessionID, keep).Scan(&cutoff)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = dropCheckpointsPG(ctx, tx, tenant, sessionID, `iteration <= $3`, cutoff)
	return err
}

// dropCheckpointsPG deletes the session's checkpoints that cond (a condition
// on a checkpoints row, its parameters numbered from $3, with args) selects
// and returns their iterations, oldest first. A remaining delta whose base is
// among them is first rewritten whole, from the rows as they still are, so
// that every remaining checkpoint reads as it did. One that cannot be rebuilt
// (it was damaged already) is left as it is: it reads as corrupted either
// way, and the write goes on. A rewind (deleting the checkpoints after a seq)
// is dropCheckpointsPG with `last_seq > $3`.
func dropCheckpointsPG(ctx context.Context, tx pgx.Tx, tenant, sessionID, cond string, args ...any) ([]int64, error) {
	where := `tenant_id = $1 AND session_id = $2 AND (` + cond + `)`
	wargs := append([]any{tenant, sessionID}, args...)
	rows, err := tx.Query(ctx, `SELECT iteration FROM checkpoints WHERE `+where+` ORDER BY iteration`, wargs...)
	if err != nil {
		return nil, err
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(gone) == 0 {
		return nil, err
	}

	rows, err = tx.Query(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints
		WHERE tenant_id = $1 AND session_id = $2 AND kind = 'delta' AND NOT (`+cond+`)
		AND base_iteration IN (SELECT iteration FROM checkpoints WHERE `+where+`)`, wargs...)
	if err != nil {
		return nil, err
	}
	stranded, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ckstate.Row, error) { return scanCkRowPG(r) })
	if err != nil {
		return nil, err
	}
	rd := newCkReaderPG(ctx, tx, tenant, sessionID)
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
			WHERE tenant_id = $4 AND session_id = $5 AND iteration = $6`,
			st.Codec, ckBodyPG(st.Body), st.Text, tenant, sessionID, row.Iteration); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM checkpoints WHERE `+where, wargs...); err != nil {
		return nil, err
	}
	return gone, nil
}
