package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// deleteCheckpointsAfterSeq deletes a session's checkpoints written after its
// message seq (last_seq > seq), in every namespace, for a rewind of its
// history, and returns the iterations it deleted of namespace "", oldest
// first. What remains reads as before. The caller owns the session row:
// pause_until still says what the deleted latest said.
func deleteCheckpointsAfterSeq(ctx context.Context, tx *sql.Tx, tenant, sessionID string, seq int64) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT namespace FROM checkpoints WHERE tenant_id = ? AND session_id = ? AND last_seq > ?`,
		tenant, sessionID, seq)
	if err != nil {
		return nil, err
	}
	namespaces, err := collect(rows, func(sc scanner) (string, error) {
		var ns string
		return ns, sc.Scan(&ns)
	})
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, ns := range namespaces {
		gone, err := dropCheckpoints(ctx, tx, tenant, sessionID, ns, `last_seq > ?`, seq)
		if err != nil {
			return nil, err
		}
		if ns == "" {
			out = gone
		}
	}
	return out, nil
}

// dropCheckpoints deletes the checkpoints of a session's namespace that cond (a
// condition on a checkpoints row, with args) selects, and their pending
// writes, and returns their iterations, oldest first. A remaining delta whose
// base is among them is first rewritten whole, from the rows as they still
// are, so that every remaining checkpoint reads as it did. One that cannot be
// rebuilt (it was damaged already) is left as it is: it reads as corrupted
// either way, and the write goes on.
func dropCheckpoints(ctx context.Context, tx *sql.Tx, tenant, sessionID, ns, cond string, args ...any) ([]int64, error) {
	where := `tenant_id = ? AND session_id = ? AND namespace = ? AND (` + cond + `)`
	wargs := append([]any{tenant, sessionID, ns}, args...)
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
		WHERE tenant_id = ? AND session_id = ? AND namespace = ? AND kind = 'delta' AND NOT (`+cond+`)
		AND base_iteration IN (SELECT iteration FROM checkpoints WHERE `+where+`)`,
		append(append([]any{tenant, sessionID, ns}, args...), wargs...)...)
	if err != nil {
		return nil, err
	}
	stranded, err := collect(rows, scanCkRow)
	if err != nil {
		return nil, err
	}
	rd := ckstore.NewReader(ctx, ckRows{tx, tenant, sessionID}, ns)
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
			WHERE tenant_id = ? AND session_id = ? AND namespace = ? AND iteration = ?`,
			st.Codec, blob(st.Body), st.Text, tenant, sessionID, ns, row.Iteration); err != nil {
			return nil, err
		}
	}
	// Their pending writes go with them (a client id names one checkpoint of
	// the namespace, so no checkpoint that stays shares them).
	if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoint_writes WHERE tenant_id = ? AND session_id = ? AND namespace = ?
		AND checkpoint_id IN (SELECT client_id FROM checkpoints WHERE `+where+`)`,
		append([]any{tenant, sessionID, ns}, wargs...)...); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE `+where, wargs...); err != nil {
		return nil, err
	}
	return gone, nil
}
