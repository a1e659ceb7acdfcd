package repo

import (
	"context"
	"database/sql"
	"time"
)

// Conversation search is kept off the append path: an FTS5 insert costs more CPU
// than the append itself. The writer indexes only when no write has arrived for
// indexIdle, in steps of at most indexBudget messages, so a write that arrives
// meanwhile waits for one short step at most. Under sustained load the index falls
// behind (searches report by how much) and catches up in the next lull.
const (
	defaultIndexIdle   = 50 * time.Millisecond
	defaultIndexBudget = 256
)

// indexIdleWork runs index steps while the queue stays empty. It reports whether
// messages may still be waiting (also after an error: the next lull retries).
func (s *Store) indexIdleWork() bool {
	for len(s.queue) == 0 {
		more, err := s.indexStep(context.Background(), s.indexBudget)
		if err != nil || !more {
			return err != nil
		}
	}
	return true
}

// indexStep indexes up to budget messages of the sessions that are behind, in one
// transaction, and says whether any remain.
func (s *Store) indexStep(ctx context.Context, budget int) (more bool, err error) {
	type behind struct {
		tenant, id      string
		indexed, latest int64
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return true, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	rows, err := tx.QueryContext(ctx, `SELECT tenant_id, id, fts_seq, last_seq FROM sessions WHERE last_seq > fts_seq LIMIT 64`)
	if err != nil {
		return true, err
	}
	var todo []behind
	for rows.Next() {
		var b behind
		if err := rows.Scan(&b.tenant, &b.id, &b.indexed, &b.latest); err != nil {
			rows.Close()
			return true, err
		}
		todo = append(todo, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return true, err
	}
	done := 0
	for _, b := range todo {
		if done >= budget {
			more = true
			break
		}
		upto := min(b.latest, b.indexed+int64(budget-done))
		if err := indexRange(ctx, tx, b.tenant, b.id, b.indexed, upto); err != nil {
			return true, err
		}
		done += int(upto - b.indexed)
		more = more || upto < b.latest
	}
	if len(todo) == 64 {
		more = true
	}
	if err := tx.Commit(); err != nil {
		return true, err
	}
	s.stats.indexed.Add(int64(done))
	return more, nil
}

// indexRange indexes a session's messages with seq in (after, upto].
func indexRange(ctx context.Context, tx *sql.Tx, tenant, session string, after, upto int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages_fts (rowid, content, tenant_id, session_id, seq)
		SELECT gid, content, tenant_id, session_id, seq FROM messages
		WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ?`, tenant, session, after, upto); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE sessions SET fts_seq = ? WHERE tenant_id = ? AND id = ?`, upto, tenant, session)
	return err
}
