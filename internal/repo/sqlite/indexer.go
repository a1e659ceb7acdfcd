package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// The indexer makes messages searchable. It runs beside the writer, never in it:
// it reads new messages through the read pool, in gid order, and writes their
// index rows into the index file (searchindex.go) through a connection of its
// own, so no tenant's write ever waits for tokenizing or FTS5's merges. A step is
// bounded by the text it indexes and by time. The indexer prefers lulls: it
// steps freely once the writer has committed nothing for indexIdle, and
// otherwise at most once every indexBusyEvery, so that under sustained writes it
// takes a small share of the CPU that requests need (and falls behind, saying so
// in index_lag), while in a lull it catches up on one core. It wakes when the
// writer commits (and once a second, for messages another process wrote).
const (
	indexStepBytes = 512 << 10             // text indexed by one step while the writer is busy
	indexStepTime  = 25 * time.Millisecond // and such a step stops after this
	// In a lull a step may take more: fewer, larger transactions make fewer
	// FTS5 segments to merge later, which is most of a bulk load's indexing.
	indexIdleStepBytes = 4 << 20
	indexIdleStepTime  = 100 * time.Millisecond
	indexBatch         = 256      // messages read at a time
	indexInlineBytes   = 64 << 10 // longer texts are read, and kept, one at a time (partsOf)
	indexPoll          = time.Second
	indexIdle          = 50 * time.Millisecond
	indexBusyEvery     = 250 * time.Millisecond
)

// stepBudget bounds one indexing step.
type stepBudget struct {
	bytes int
	time  time.Duration
}

var (
	busyStep = stepBudget{indexStepBytes, indexStepTime}
	idleStep = stepBudget{indexIdleStepBytes, indexIdleStepTime}
)

// indexerStatements are the indexer's, prepared once: parsing a statement
// for every message (its content) and every part (its insert) cost more than
// half of what indexing a short message cost.
type indexerStatements struct {
	batch, content *sql.Stmt // on the read pool
	insert         *sql.Stmt // on the index file's connection
}

func prepareIndexerStatements(ctx context.Context, rdb, idb *sql.DB) (indexerStatements, error) {
	var st indexerStatements
	var err error
	if st.batch, err = rdb.PrepareContext(ctx, `SELECT gid, tenant_id, session_id, seq,
			CASE WHEN octet_length(content) <= ? THEN content END
		FROM messages INDEXED BY messages_by_gid WHERE gid >= ? ORDER BY gid LIMIT ?`); err != nil {
		return st, err
	}
	if st.content, err = rdb.PrepareContext(ctx, `SELECT content FROM messages WHERE tenant_id = ? AND session_id = ? AND seq = ?`); err != nil {
		return st, err
	}
	st.insert, err = idb.PrepareContext(ctx, insertPartSQL)
	return st, err
}

// runIndexer indexes until stop is closed.
func (s *Store) runIndexer(st indexState) {
	defer close(s.indexerDone)
	ctx := context.Background()
	for {
		// Count what is new for index_lag first: it is cheap, and searches
		// should not wait for the indexer's turn to see it.
		_ = s.lag.observe(ctx, s.rdb)
		select {
		case <-s.stopIndexer:
			return
		case <-s.indexWake:
		case <-time.After(indexPoll):
		}
		var last time.Time
		for {
			wait, budget := s.untilIndexTurn(last)
			if wait > 0 {
				select {
				case <-s.stopIndexer:
					return
				case <-time.After(wait):
				}
				continue
			}
			more, err := s.indexStep(ctx, &st, budget)
			last = time.Now()
			if err == nil && !more {
				_ = s.lag.resync(ctx, s.rdb, st.nextGID)
			}
			if err != nil || !more {
				break // an error is retried at the next wake-up
			}
			select {
			case <-s.stopIndexer:
				return
			default:
			}
		}
	}
}

// untilIndexTurn is how long the indexer should wait before its next step, and
// that step's budget: not at all, with the idle budget, once the writer has
// been idle for indexIdle; else until indexBusyEvery after its last step, or
// until the writer would have been idle that long, whichever comes first.
func (s *Store) untilIndexTurn(lastStep time.Time) (time.Duration, stepBudget) {
	idleFor := time.Since(time.Unix(0, s.lastCommit.Load()))
	if idleFor >= indexIdle {
		return 0, idleStep
	}
	return max(0, min(indexIdle-idleFor, indexBusyEvery-time.Since(lastStep))), busyStep
}

// pendingMessage is a message the indexer has yet to finish; content is
// empty when the text is longer than indexInlineBytes (partsOf reads it).
type pendingMessage struct {
	gid             int64
	tenant, session string
	seq             int64
	content         sql.NullString
}

// indexStep applies queued deletions, then indexes the next parts of the next
// messages, in one transaction of the index file, and says whether any remain.
// st is advanced only when the transaction commits.
func (s *Store) indexStep(ctx context.Context, st *indexState, budget stepBudget) (more bool, err error) {
	start := time.Now()
	next := *st
	tx, err := s.idb.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if more, err = s.applyDeletes(ctx, tx, &next); err != nil {
		return false, err
	}
	// One read for the batch, texts included: a read per message cost about
	// as much as indexing a short one.
	rows, err := s.ist.batch.QueryContext(ctx, indexInlineBytes, next.nextGID, indexBatch)
	if err != nil {
		return false, err
	}
	batch, err := collect(rows, func(sc scanner) (pendingMessage, error) {
		var m pendingMessage
		return m, sc.Scan(&m.gid, &m.tenant, &m.session, &m.seq, &m.content)
	})
	if err != nil {
		return false, err
	}
	ins := tx.StmtContext(ctx, s.ist.insert)
	// The budget is checked only once a part is indexed: a step that spent its
	// time before its first part (reading a large message on a busy machine)
	// would otherwise never make progress.
	left, progressed := budget.bytes, false
	var finished []pendingMessage
	for _, m := range batch {
		if progressed && (left <= 0 || time.Since(start) > budget.time) {
			more = true
			break
		}
		part := 0
		if m.gid == next.nextGID {
			part = next.nextPart // the rest of a message an earlier step began
		}
		parts, err := s.partsOf(ctx, m)
		if err != nil {
			return false, err
		}
		upto := part
		for upto < len(parts) && (!progressed || (left > 0 && time.Since(start) <= budget.time)) {
			left -= len(parts[upto]) + 64 // a row costs something even when empty
			upto++
			progressed = true
		}
		if err := indexPartsFrom(ctx, ins, m.tenant, m.session, m.seq, m.gid, parts[:upto], part); err != nil {
			return false, err
		}
		if upto < len(parts) {
			next.nextGID, next.nextPart, more = m.gid, upto, true
			break
		}
		next.nextGID, next.nextPart = m.gid+1, 0
		finished = append(finished, m)
	}
	more = more || len(batch) == indexBatch
	if _, err := tx.ExecContext(ctx, `UPDATE index_state SET next_gid = ?, next_part = ?, deletes_upto = ? WHERE id = 1`,
		next.nextGID, next.nextPart, next.deletesUpto); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	*st = next
	s.deletesApplied.Store(next.deletesUpto)
	s.stats.indexed.Add(int64(len(finished)))
	s.lag.indexed(finished, next.nextGID)
	return more, nil
}

// applyDeletes removes the index rows of messages deleted since the last step,
// as the main file's index_deletes lists them, and says whether more wait.
func (s *Store) applyDeletes(ctx context.Context, tx *sql.Tx, st *indexState) (more bool, err error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, gid, bytes FROM index_deletes WHERE id > ? ORDER BY id LIMIT 256`, st.deletesUpto)
	if err != nil {
		return false, err
	}
	type del struct{ id, gid, bytes int64 }
	list, err := collect(rows, func(sc scanner) (del, error) {
		var d del
		return d, sc.Scan(&d.id, &d.gid, &d.bytes)
	})
	if err != nil {
		return false, err
	}
	for _, d := range list {
		if d.gid <= st.nextGID { // a message the index never reached has no rows
			for k := 0; k <= maxPartsOf(d.bytes); k++ {
				if _, err := tx.ExecContext(ctx, `DELETE FROM messages_fts WHERE rowid = ?`, partRowID(d.gid, k)); err != nil {
					return false, err
				}
			}
		}
		st.deletesUpto = d.id
	}
	return len(list) == 256, nil
}

// partsOf is the index parts of one message's text. The last long message's
// parts are kept: a long message is indexed over many steps, and reading and
// cutting a megabyte again for each would cost more than indexing its next part.
func (s *Store) partsOf(ctx context.Context, m pendingMessage) ([]string, error) {
	if m.content.Valid {
		return indexParts(m.content.String), nil
	}
	if s.lastParts.gid == m.gid && s.lastParts.parts != nil {
		return s.lastParts.parts, nil
	}
	var content string
	if err := s.ist.content.QueryRowContext(ctx, m.tenant, m.session, m.seq).Scan(&content); err != nil {
		return nil, err
	}
	parts := indexParts(content)
	s.lastParts.gid, s.lastParts.parts = m.gid, parts
	return parts, nil
}
