package repo

import (
	"context"
	"database/sql"
	"time"
)

// Conversation search is kept off the append path: an FTS5 insert costs more CPU
// than the append itself. The writer indexes only when no write has arrived for
// indexIdle, one short step at a time, so that a write arriving meanwhile waits
// for one step at most. A step is bounded by the text it indexes and by time,
// not by a count of messages: a step of 256 messages of 1 MB each used to hold
// every tenant's writes for seconds. Under sustained load the index falls behind
// (searches report by how much) and catches up in the next lull.
const (
	defaultIndexIdle = 50 * time.Millisecond
	indexStepBytes   = 32 << 10             // text indexed by one step (~1 ms of FTS5 work here)
	indexStepTime    = 2 * time.Millisecond // and a step stops after this, whatever it has done
)

// indexIdleWork runs index steps while the queue stays empty. It reports whether
// messages may still be waiting (also after an error: the next lull retries).
func (s *Store) indexIdleWork() bool {
	for len(s.queue) == 0 {
		more, err := s.indexStep(context.Background())
		if err != nil || !more {
			return err != nil
		}
	}
	return true
}

// behind is a session whose messages are not all indexed: messages up to seq
// indexed are, and so are the first part parts of message indexed + 1.
type behind struct {
	tenant, id      string
	indexed, latest int64
	part            int
}

// indexStep indexes the next parts of the sessions that are behind, in one
// transaction, until it has indexed indexStepBytes of text or spent
// indexStepTime, and says whether any remain.
func (s *Store) indexStep(ctx context.Context) (more bool, err error) {
	start := time.Now()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return true, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	rows, err := tx.QueryContext(ctx, `SELECT tenant_id, id, fts_seq, fts_part, last_seq FROM sessions
		WHERE last_seq > fts_seq LIMIT 16`)
	if err != nil {
		return true, err
	}
	todo, err := collect(rows, func(sc scanner) (behind, error) {
		var b behind
		return b, sc.Scan(&b.tenant, &b.id, &b.indexed, &b.part, &b.latest)
	})
	if err != nil {
		return true, err
	}
	budget, done := indexStepBytes, 0
	for _, b := range todo {
		if budget <= 0 || time.Since(start) > indexStepTime {
			more = true
			break
		}
		finished, n, err := s.indexSession(ctx, tx, b, &budget, start)
		if err != nil {
			return true, err
		}
		done += n
		more = more || !finished
	}
	more = more || len(todo) == 16
	if err := tx.Commit(); err != nil {
		return true, err
	}
	s.stats.indexed.Add(int64(done))
	return more, nil
}

// indexSession indexes one session's next parts within the step's budget, saves
// how far it got, and says whether it reached the session's last message and how
// many messages it finished.
func (s *Store) indexSession(ctx context.Context, tx *sql.Tx, b behind, budget *int, start time.Time) (finished bool, n int, err error) {
	seq, part := b.indexed+1, b.part
	for seq <= b.latest && *budget > 0 && time.Since(start) <= indexStepTime {
		var (
			gid     int64
			content string
		)
		err := tx.QueryRowContext(ctx, `SELECT gid, content FROM messages WHERE tenant_id = ? AND session_id = ? AND seq = ?`,
			b.tenant, b.id, seq).Scan(&gid, &content)
		if err != nil {
			return false, n, err
		}
		parts := indexParts(content)
		upto := part
		for upto < len(parts) && (upto == part || (*budget > 0 && time.Since(start) <= indexStepTime)) {
			*budget -= len(parts[upto]) + 64 // a row costs something even when empty
			upto++
		}
		if err := indexPartsFrom(ctx, tx, b.tenant, b.id, seq, gid, parts[:upto], part); err != nil {
			return false, n, err
		}
		if upto < len(parts) {
			part = upto
			break
		}
		seq, part, n = seq+1, 0, n+1
	}
	_, err = tx.ExecContext(ctx, `UPDATE sessions SET fts_seq = ?, fts_part = ? WHERE tenant_id = ? AND id = ?`,
		seq-1, part, b.tenant, b.id)
	return seq > b.latest, n, err
}
