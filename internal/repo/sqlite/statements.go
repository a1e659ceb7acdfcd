package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/logbook/logbook/internal/model"
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
	insertMessageFile             *sql.Stmt // a message's reference to a file
	fileExists                    *sql.Stmt
	fileReadable                  *sql.Stmt // fileExists for a key bound to a user
	updateSessionCounters         *sql.Stmt
	updateSessionCountersActivate *sql.Stmt
	insertRequestKey              *sql.Stmt
	insertEvent                   *sql.Stmt

	// The usage folder's (usagefold.go).
	usageFolded, usageStretch, usageCount, addUsageDaily, addUsageSession, setUsageFolded *sql.Stmt
}

func prepareWriterStatements(ctx context.Context, db *sql.DB) (writerStatements, error) {
	var st writerStatements
	for _, p := range []struct {
		dst *(*sql.Stmt)
		sql string
	}{
		{&st.savepoint, `SAVEPOINT w`},
		{&st.maxGID, maxGIDSQL},
		{&st.release, `RELEASE w`},
		{&st.dataVersion, `PRAGMA data_version`},
		{&st.rollbackTo, `ROLLBACK TO w`},
		{&st.selectRequestKey, `SELECT request_hash, seqs FROM request_keys WHERE tenant_id = ? AND session_id = ? AND key = ?`},
		{&st.selectMessageByKey, `SELECT ` + messageColumns + `, request_hash FROM messages
			WHERE tenant_id = ? AND session_id = ? AND idempotency_key = ?`},
		{&st.selectSessionState, `SELECT status, last_seq, message_count, total_tokens, total_cost, turn_count, expires_at, agent_id
			FROM sessions WHERE tenant_id = ? AND id = ?`},
		{&st.insertMessage, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, name, tool_calls,
			tool_call_id, agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash,
			gid, cum_tokens, cum_cost, parts, is_error, provider_item, cum_turns, in_feed, client_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.insertEvent, `INSERT INTO events (pos, tenant_id, session_id, type, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`},
		// With the session's user, so that "does this user reference this file?"
		// is one index probe (fileReadable).
		{&st.insertMessageFile, `INSERT OR IGNORE INTO message_files (tenant_id, session_id, seq, file_id, user_id)
			SELECT ?1, ?2, ?3, ?4, user_id FROM sessions WHERE tenant_id = ?1 AND id = ?2`},
		{&st.fileExists, `SELECT 1 FROM files WHERE tenant_id = ? AND id = ?`},
		{&st.fileReadable, `SELECT 1 FROM files WHERE tenant_id = ?1 AND id = ?2 AND ` + fileReadable},
		// Two forms: status only in the one that changes it, since an UPDATE that
		// names a column rewrites the index entries that hold it.
		{&st.updateSessionCounters, `UPDATE sessions SET message_count = ?, last_seq = ?, total_tokens = ?, total_cost = ?,
			turn_count = ?, updated_at = ? WHERE tenant_id = ? AND id = ?`},
		{&st.updateSessionCountersActivate, `UPDATE sessions SET message_count = ?, last_seq = ?, total_tokens = ?, total_cost = ?,
			turn_count = ?, updated_at = ?, status = 'active' WHERE tenant_id = ? AND id = ? AND status = 'created'`},
		{&st.insertRequestKey, `INSERT INTO request_keys (tenant_id, session_id, key, request_hash, seqs, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`},
		{&st.usageFolded, usageFoldedSQL},
		{&st.usageStretch, usageStretchSQL},
		{&st.usageCount, usageCountSQL},
		{&st.addUsageDaily, addUsageDailySQL},
		{&st.addUsageSession, addUsageSessionSQL},
		{&st.setUsageFolded, setUsageFoldedSQL},
	} {
		s, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			return st, fmt.Errorf("repo: prepare (is the schema migrated?): %w", err)
		}
		*p.dst = s
	}
	return st, nil
}

// readStatements are the page path's statements, prepared once on the read pool
// (database/sql prepares each on a connection the first time it runs there):
// parsing them again for every page was an eighth of a page's CPU.
type readStatements struct {
	lineage *sql.Stmt
	page    [4]*sql.Stmt // by pageVariant
	// A context read runs before every LLM call: its statements too.
	session, latestCompaction, systems, cumTokens, blocks *sql.Stmt
	// And the block reads: a label's block, an agent's attachments.
	blockAt, shared *sql.Stmt
	// The live feed's reads of a session behind what memory holds (events.go).
	feedLastSeq, feedProbe, feedSessionMessages *sql.Stmt
}

// The page statements' variants: bit 0 descending, bit 1 filtered by role.
const (
	pageAsc  = 0
	pageDesc = 1
)

// pageVariant picks the page statement for a filter: order, and role or not.
func pageVariant(f model.MessageFilter) int {
	v := 0
	if f.Desc {
		v |= 1
	}
	if f.Role != "" {
		v |= 2
	}
	return v
}

func prepareReadStatements(ctx context.Context, db *sql.DB) (readStatements, error) {
	var st readStatements
	var err error
	if st.lineage, err = db.PrepareContext(ctx, lineageSQL); err != nil {
		return st, fmt.Errorf("repo: prepare: %w", err)
	}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&st.session, `SELECT ` + sessionColumns + ` FROM sessions WHERE tenant_id = ? AND id = ?`},
		{&st.latestCompaction, `SELECT ` + compactionColumns + ` FROM compactions WHERE tenant_id = ? AND session_id = ? ORDER BY n DESC LIMIT 1`},
		{&st.systems, `SELECT ` + messageColumns + ` FROM messages INDEXED BY messages_by_instruction
			WHERE tenant_id = ? AND session_id = ? AND role IN ('system', 'developer') AND seq > ? AND seq <= ? ORDER BY seq`},
		{&st.cumTokens, `SELECT cum_tokens FROM messages WHERE tenant_id = ? AND session_id = ? AND seq = ?`},
		{&st.blocks, agentBlocksQuery},
		{&st.blockAt, blockAtQuery},
		{&st.shared, sharedQuery},
		{&st.feedLastSeq, `SELECT MAX(seq) FROM messages WHERE tenant_id = ? AND session_id = ?`},
		{&st.feedProbe, `SELECT gid, in_feed FROM messages WHERE tenant_id = ? AND session_id = ? AND seq = ?`},
		{&st.feedSessionMessages, `SELECT ` + messageColumns + `, gid, tenant_id FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq >= ? AND in_feed = 1 ORDER BY seq`},
	} {
		if *p.dst, err = db.PrepareContext(ctx, p.sql); err != nil {
			return st, fmt.Errorf("repo: prepare: %w", err)
		}
	}
	for v := range st.page {
		order, role := "ASC", ""
		if v&1 != 0 {
			order = "DESC"
		}
		if v&2 != 0 {
			role = " AND role = ?"
		}
		if st.page[v], err = db.PrepareContext(ctx, `SELECT `+messageColumns+` FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq < ?`+role+` ORDER BY seq `+order+` LIMIT ?`); err != nil {
			return st, fmt.Errorf("repo: prepare: %w", err)
		}
	}
	return st, nil
}
