package repo

import (
	"context"
	"database/sql"
	"fmt"
)

// writerStatements are the append path's statements, prepared once on the writer's
// connection: compiling an INSERT costs more CPU than running it.
type writerStatements struct {
	savepoint, release, rollbackTo *sql.Stmt // wrap every write in the group
	maxGID                         *sql.Stmt
	dataVersion                    *sql.Stmt

	selectRequestKey              *sql.Stmt
	selectMessageByKey            *sql.Stmt
	selectSessionState            *sql.Stmt
	insertMessage                 *sql.Stmt
	updateSessionCounters         *sql.Stmt
	updateSessionCountersActivate *sql.Stmt
	insertRequestKey              *sql.Stmt
}

func prepareWriterStatements(ctx context.Context, db *sql.DB) (writerStatements, error) {
	var st writerStatements
	for _, p := range []struct {
		dst *(*sql.Stmt)
		sql string
	}{
		{&st.savepoint, `SAVEPOINT w`},
		// the highest gid ever handed out: the newest messages may have been purged
		{&st.maxGID, `SELECT MAX(COALESCE((SELECT MAX(gid) FROM messages), 0),
			COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'gid_high_water'), 0))`},
		{&st.release, `RELEASE w`},
		{&st.dataVersion, `PRAGMA data_version`},
		{&st.rollbackTo, `ROLLBACK TO w`},
		{&st.selectRequestKey, `SELECT request_hash, seqs FROM request_keys WHERE tenant_id = ? AND session_id = ? AND key = ?`},
		{&st.selectMessageByKey, `SELECT ` + messageColumns + `, request_hash FROM messages
			WHERE tenant_id = ? AND session_id = ? AND idempotency_key = ?`},
		{&st.selectSessionState, `SELECT status, last_seq, message_count, total_tokens, total_cost FROM sessions WHERE tenant_id = ? AND id = ?`},
		{&st.insertMessage, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, name, tool_calls,
			tool_call_id, agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash,
			gid, cum_tokens, cum_cost)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		// Two forms: status only in the one that changes it, since an UPDATE that
		// names a column rewrites the index entries that hold it.
		{&st.updateSessionCounters, `UPDATE sessions SET message_count = ?, last_seq = ?, total_tokens = ?, total_cost = ?,
			updated_at = ? WHERE tenant_id = ? AND id = ?`},
		{&st.updateSessionCountersActivate, `UPDATE sessions SET message_count = ?, last_seq = ?, total_tokens = ?, total_cost = ?,
			updated_at = ?, status = 'active' WHERE tenant_id = ? AND id = ? AND status = 'created'`},
		{&st.insertRequestKey, `INSERT INTO request_keys (tenant_id, session_id, key, request_hash, seqs, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`},
	} {
		s, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			return st, fmt.Errorf("repo: prepare (is the schema migrated?): %w", err)
		}
		*p.dst = s
	}
	return st, nil
}
