package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/repo/ckstate"
)

// pruneCheckpoints keeps the newest keep checkpoints of a session. Deltas lean
// on newer rows only, so deleting the oldest strands none; dropCheckpoints
// checks all the same.
func pruneCheckpoints(ctx context.Context, tx *sql.Tx, tenant, sessionID string, keep int) error {
	var cutoff int64
	err := tx.QueryRowContext(ctx, `SELECT iteration FROM checkpoints WHERE tenant_id = ? AND session_id = ?
		ORDER BY iteration DESC LIMIT 1 OFFSET ?`, tenant, sessionID, keep).Scan(&cutoff)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = dropCheckpoints(ctx, tx, tenant, sessionID, `iteration <= ?`, cutoff)
	return err
}

// deleteCheckpointsAfterSeq deletes a session's checkpoints written after its
// message seq (last_seq > seq), for a rewind of its history, and returns their
// iterations, oldest first. What remains reads as before. The caller owns the
// session row: pause_until still says what the deleted latest said.
func deleteCheckpointsAfterSeq(ctx context.Context, tx *sql.Tx, tenant, sessionID string, seq int64) ([]int64, error) {
	return dropCheckpoints(ctx, tx, tenant, sessionID, `last_seq > ?`, seq)
}

// dropCheckpoints deletes the session's checkpoints that cond (a condition on
// a checkpoints row, with args) selects and returns their iterations, oldest
// first. A remaining delta whose base is among them is first rewritten whole,
// from the rows as they still are, so that every remaining checkpoint reads as
// it did. One that cannot be rebuilt (it was damaged already) is left as it is:
// it reads as corrupted either way, and the write goes on.
func dropCheckpoints(ctx context.Context, tx *sql.Tx, tenant, sessionID, cond string, args ...any) ([]int64, error) {
	where := `tenant_id = ? AND session_id = ? AND (` + cond + `)`
	wargs := append([]any{tenant, sessionID}, args...)
	rows, err := tx.QueryContext(ctx, `SELECT iteration FROM checkpoints WHERE `+where+` ORDER BY iteration`, wargs...)
	if err != nil {
		return nil, err
	}
	gone, err := collect(rows, func(sc scanner) (int64, error) {
		var it int64
		return it, sc.Scan(&it)
	})
	if err != nil || len(gone) == 0 {
		return nil, err
	}

	rows, err = tx.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints
		WHERE tenant_id = ? AND session_id = ? AND kind = 'delta' AND NOT (`+cond+`)
		AND base_iteration IN (SELECT iteration FROM checkpoints WHERE `+where+`)`,
		append(append([]any{tenant, sessionID}, args...), wargs...)...)
	if err != nil {
		return nil, err
	}
	stranded, err := collect(rows, scanCkRow)
	if err != nil {
		return nil, err
	}
	rd := newCkReader(ctx, tx, tenant, sessionID)
	for _, row := range stranded {
		c, err := rd.Read(row)
		if isCorrupted(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		st := ckstate.EncodeFull(c.State)
		if _, err := tx.ExecContext(ctx, `UPDATE checkpoints SET kind = 'full', codec = ?, base_iteration = NULL, body = ?, state = ?
			WHERE tenant_id = ? AND session_id = ? AND iteration = ?`,
			st.Codec, blob(st.Body), st.Text, tenant, sessionID, row.Iteration); err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE `+where, wargs...); err != nil {
		return nil, err
	}
	return gone, nil
}
