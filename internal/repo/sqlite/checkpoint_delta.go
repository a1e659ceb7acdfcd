package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// keepAsDelta rewrites d's row as a delta from base (the iteration just
// written) when it fits the run of deltas under it (ckstate.Delta.Fits). The
// row must still be the full one the patch was computed from.
func keepAsDelta(ctx context.Context, tx *sql.Tx, tenant, sessionID, ns string, d *ckstate.Delta, base int64) error {
	if d == nil {
		return nil
	}
	var n, bytes int64
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM checkpoints
		WHERE tenant_id = ?1 AND session_id = ?2 AND namespace = ?4 AND iteration < ?3 AND iteration > COALESCE((
			SELECT MAX(iteration) FROM checkpoints WHERE tenant_id = ?1 AND session_id = ?2 AND namespace = ?4
			AND iteration < ?3 AND kind = 'full'), 0)`,
		tenant, sessionID, d.Iteration, ns).Scan(&n, &bytes)
	if err != nil {
		return err
	}
	if !d.Fits(n, bytes) {
		return nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE checkpoints SET kind = 'delta', codec = ?, base_iteration = ?, body = ?, state = ''
		WHERE tenant_id = ? AND session_id = ? AND namespace = ? AND iteration = ? AND sha256 = ? AND kind = 'full'`,
		d.Codec, base, d.Body, tenant, sessionID, ns, d.Iteration, d.SHA256)
	return err
}

// insertCheckpoint writes c as a full row.
func insertCheckpoint(ctx context.Context, tx *sql.Tx, tenant string, c model.Checkpoint, st ckstate.Stored) error {
	meta := c.Metadata.String()
	_, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (tenant_id, session_id, namespace, iteration, id, client_id,
		parent_id, parent_iteration, metadata, state, last_seq, sha256, created_at, codec, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenant, c.SessionID, c.Namespace, c.Iteration, c.ID, c.ClientID, c.ParentID, c.ParentIteration, meta,
		st.Text, c.LastSeq, c.SHA256, int64(c.CreatedAt), st.Codec, blob(st.Body))
	return err
}

// blob is b as a parameter: NULL when nil, which says "the state is in the
// state column".
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
