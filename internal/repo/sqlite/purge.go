package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Purge bounds beyond repo.PurgeBatch and repo.PurgeBatchRows:
// purgeBatchTime bounds a batch by time as well: erasing a session is a dozen
// statements (~1 ms), and a writer transaction holds every append queued
// behind it, so a batch stops taking sessions once it has worked this long
// (at least one session each). Measured with BenchmarkAppendDuringSweep
// (internal/expiry): 50-session batches held appends for ~65 ms each.
//
// Between batches the purge rests, and lets the writes that queued behind a
// batch commit in a group of their own before it queues the next
// (yieldToWrites): a write that shares a transaction with a batch waits for
// the batch. Measured with BenchmarkAppendDuring/purge (300 sessions of 100
// messages of ~1 KB): appends' p99 8 ms alone, 127 ms beside the purge with
// 10 ms batches and no rest, 18 ms with 5 ms batches and the queue drained,
// 13–15 ms with the rest as well (p50 1.0 ms, as alone), the purge taking
// about twice as long.
const (
	purgeBatchTime = 5 * time.Millisecond
	purgeYieldMax  = 50 * time.Millisecond // the longest a purge waits for others' writes between batches
	passageBatch   = 500                   // expired passages deleted per writer transaction
	itemBatch      = 500                   // expired items deleted per writer transaction
	copyChunk      = 500                   // messages read at a time when a fork takes its prefix over
)

// PurgeSession erases a session for good: its messages, checkpoints, idempotency
// keys and search-index rows, in one writer transaction.
//
// Forks that share its prefix (prefix_shared) keep their history: each first takes
// its whole inherited prefix, seq 1..forked_at_seq, as rows of its own (copied
// from whichever sessions of its lineage stored them), indexed for search, and
// stops sharing (prefix_shared = 0; parent_id and forked_at_seq stay as history).
// The copies keep seq, content, times and running totals, but get new message ids
// (msg_…), because an id is unique per tenant and the originals may outlive the
// purge in an ancestor; so fetching an inherited message of such a fork by its old
// id answers 404 afterwards. Their idempotency keys are not copied: keys belong to
// the session that was asked. Forks of those forks still read through their own
// parent, which now stores the prefix, and are unaffected.
//
// Errors: KindNotFound.
func (s *Store) PurgeSession(ctx context.Context, tenant, id string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, _, err := s.purgeSessionTx(ctx, tx, tenant, id)
		return err
	})
}

// PurgeSessions erases the tenant's sessions a purge request picks, each as
// PurgeSession does, in writer transactions of bounded size (repo.PurgeSessions).
// Errors: KindUnavailable, context errors.
func (s *Store) PurgeSessions(ctx context.Context, tenant string, in model.PurgeRequest) (model.PurgeResult, error) {
	return repo.PurgeSessions(ctx, purger{s}, tenant, in)
}

// purger is repo.Purger on SQLite.
type purger struct{ s *Store }

func (p purger) PurgeCount(ctx context.Context, tenant string, in model.PurgeRequest, cutoff model.Time) (model.PurgeResult, error) {
	out := model.PurgeResult{DryRun: true}
	match := purgeMatch(in)
	err := p.s.rdb.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM sessions s WHERE s.tenant_id = ?1 AND `+match("s")+`),
		(SELECT COUNT(*) FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
			WHERE s.tenant_id = ?1 AND `+match("s")+`),
		(SELECT COUNT(*) FROM checkpoints c JOIN sessions s ON s.tenant_id = c.tenant_id AND s.id = c.session_id
			WHERE s.tenant_id = ?1 AND `+match("s")+`),
		(SELECT COUNT(*) FROM passages WHERE ?4 AND tenant_id = ?1 AND expires_at IS NOT NULL AND expires_at < ?3),
		(SELECT COUNT(*) FROM items WHERE ?4 AND tenant_id = ?1 AND expires_at IS NOT NULL AND expires_at < ?3)`,
		tenant, in.Status, int64(cutoff), in.Expired).Scan(&out.Sessions, &out.Messages, &out.Checkpoints, &out.Passages, &out.Items)
	return out, mapErr(err)
}

// PurgeBatch stops taking sessions once it has worked purgeBatchTime (at
// least one): the writer holds every append queued behind it.
func (p purger) PurgeBatch(ctx context.Context, tenant string, in model.PurgeRequest, cutoff model.Time, after *repo.PurgeCursor) (model.PurgeResult, *repo.PurgeCursor, error) {
	var (
		batch model.PurgeResult
		last  *repo.PurgeCursor
	)
	err := p.s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		batch, last = model.PurgeResult{}, nil
		start := time.Now()
		picked, err := purgeCandidates(ctx, tx, tenant, purgeMatch(in), in.Status, cutoff, after)
		if err != nil {
			return err
		}
		for i := range picked {
			if i > 0 && time.Since(start) > purgeBatchTime {
				break // the rest after the cursor, in the next batch
			}
			msgs, ckps, err := p.s.purgeSessionTx(ctx, tx, tenant, picked[i].ID)
			if err != nil {
				return err
			}
			batch.Sessions++
			batch.Messages += msgs
			batch.Checkpoints += ckps
			last = &picked[i]
		}
		return nil
	})
	return batch, last, err
}

func (p purger) PurgeExpiredPassages(ctx context.Context, tenant string, cutoff model.Time) (int64, error) {
	return p.s.purgeExpiredPassages(ctx, tenant, cutoff)
}

func (p purger) PurgeExpiredItems(ctx context.Context, tenant string, cutoff model.Time) (int64, error) {
	return p.s.purgeExpiredItems(ctx, tenant, cutoff)
}

// RestAfterBatch is yieldToWrites: repo.PurgeSessions calls it between batches.
func (p purger) RestAfterBatch(ctx context.Context, took time.Duration) { p.s.yieldToWrites(ctx, took) }

// yieldToWrites rests after a batch that took took, as long again, and
// waits, up to purgeYieldMax, while other writes are queued for the writer:
// a write that arrives while a batch runs waits for it, and one queued when
// the next is queued would share its transaction. The purge then holds the
// writer at most about half the time, whatever the load: slower, but under
// a load that never leaves the queue empty it still goes on.
func (s *Store) yieldToWrites(ctx context.Context, took time.Duration) {
	rest := time.NewTimer(min(took, purgeYieldMax))
	defer rest.Stop()
	select {
	case <-rest.C:
	case <-ctx.Done():
		return
	}
	deadline := time.Now().Add(purgeYieldMax)
	for len(s.queue) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}

// purgeCandidates picks the next batch after the cursor, in (created_at, id)
// order: matching sessions that no matching fork shares a prefix with (leaves
// first), up to purgeBatch sessions or about purgeBatchRows messages, at least one.
func purgeCandidates(ctx context.Context, tx *sql.Tx, tenant string, match func(string) string, status model.Status, cutoff model.Time, after *repo.PurgeCursor) ([]repo.PurgeCursor, error) {
	cond, args := "", []any{tenant, status, int64(cutoff), repo.PurgeBatch}
	if after != nil {
		cond, args = " AND (s.created_at, s.id) > (?5, ?6)", append(args, after.CreatedAt, after.ID)
	}
	rows, err := tx.QueryContext(ctx, `SELECT s.created_at, s.id, s.message_count FROM sessions s
		WHERE s.tenant_id = ?1 AND `+match("s")+cond+`
		AND NOT EXISTS (SELECT 1 FROM sessions c INDEXED BY sessions_by_parent
			WHERE c.tenant_id = s.tenant_id AND c.parent_id IS NOT NULL AND c.parent_id = s.id
			AND c.prefix_shared = 1 AND `+match("c")+`)
		ORDER BY s.created_at, s.id LIMIT ?4`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return repo.TakeCandidates(rows)
}

// purgeMatch is the condition a purge picks sessions by, over the table
// alias a, with ?2 the status and ?3 the cutoff: status and updated_at, or,
// for in.Expired, an expires_at before the cutoff (the status must be ”).
func purgeMatch(in model.PurgeRequest) func(a string) string {
	if in.Expired {
		return func(a string) string {
			return "?2 = '' AND " + a + ".expires_at IS NOT NULL AND " + a + ".expires_at < ?3"
		}
	}
	return func(a string) string { return a + ".status = ?2 AND " + a + ".updated_at < ?3" }
}

// purgeExpiredPassages deletes the tenant's passages whose expires_at is before
// cutoff, passageBatch to a writer transaction, and counts them.
func (s *Store) purgeExpiredPassages(ctx context.Context, tenant string, cutoff model.Time) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			n, err = execCount(ctx, tx, `DELETE FROM passages WHERE pk IN (SELECT pk FROM passages
				WHERE tenant_id = ? AND expires_at IS NOT NULL AND expires_at < ? LIMIT ?)`, tenant, int64(cutoff), passageBatch)
			return err
		})
		total += n
		if err != nil || n < passageBatch {
			return total, err
		}
	}
}

// purgeExpiredItems deletes the tenant's items whose expires_at is before
// cutoff, with their texts to embed, itemBatch to a writer transaction, and
// counts them.
func (s *Store) purgeExpiredItems(ctx context.Context, tenant string, cutoff model.Time) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, `DELETE FROM items WHERE rowid IN (SELECT rowid FROM items
				WHERE tenant_id = ? AND expires_at IS NOT NULL AND expires_at < ? LIMIT ?) RETURNING id`, tenant, int64(cutoff), itemBatch)
			if err != nil {
				return err
			}
			ids, err := collect(rows, func(sc scanner) (string, error) {
				var id string
				return id, sc.Scan(&id)
			})
			if err != nil {
				return err
			}
			n = int64(len(ids))
			for _, id := range ids {
				if _, err := tx.ExecContext(ctx, `DELETE FROM item_vectors WHERE tenant_id = ? AND item_id = ?`, tenant, id); err != nil {
					return err
				}
			}
			return nil
		})
		total += n
		if err != nil || n < itemBatch {
			return total, err
		}
	}
}

// purgeSessionTx erases one session inside the writer's transaction, after its
// sharing forks have taken their prefixes over, and returns how many messages and
// checkpoints it stored.
func (s *Store) purgeSessionTx(ctx context.Context, tx *sql.Tx, tenant, id string) (msgs, ckps int64, err error) {
	s.sessions.forget(tenant, id)
	s.lineageMoved = true // its forks will store their prefixes themselves
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE tenant_id = ? AND id = ?`, tenant, id).Scan(&one)
	if err == sql.ErrNoRows {
		return 0, 0, model.NotFound("session", id)
	}
	if err != nil {
		return 0, 0, err
	}
	children, err := sharingForks(ctx, tx, tenant, id)
	if err != nil {
		return 0, 0, err
	}
	for _, child := range children {
		if err := s.detachFork(ctx, tx, tenant, child); err != nil {
			return 0, 0, err
		}
	}
	// The indexer removes their index rows, found through the messages' gids.
	if err := s.noteDeletedMessages(ctx, tx, tenant, id, 0, math.MaxInt64); err != nil {
		return 0, 0, err
	}
	if err := releaseFiles(ctx, tx, tenant, id, 0); err != nil {
		return 0, 0, err
	}
	if err := takeBackUsage(ctx, tx, tenant, id, 0); err != nil {
		return 0, 0, err
	}
	if msgs, err = execCount(ctx, tx, `DELETE FROM messages WHERE tenant_id = ? AND session_id = ?`, tenant, id); err != nil {
		return 0, 0, err
	}
	if ckps, err = execCount(ctx, tx, `DELETE FROM checkpoints WHERE tenant_id = ? AND session_id = ?`, tenant, id); err != nil {
		return 0, 0, err
	}
	// Its events go too: they carry its sessions' and compactions' data, and a
	// purge leaves nothing of the session behind.
	for _, table := range purgedTables {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE tenant_id = ? AND session_id = ?`, tenant, id); err != nil {
			return 0, 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE tenant_id = ? AND id = ?`, tenant, id); err != nil {
		return 0, 0, err
	}
	return msgs, ckps, nil
}

// purgedTables are the tables besides messages and checkpoints that hold a
// session's rows under (tenant_id, session_id); each has an index that
// leads with those two (TestPurgeDeletesReadTheSessionsRowsOnly).
var purgedTables = []string{"request_keys", "rewound_keys", "compactions", "checkpoint_writes", "tool_calls", "tool_results", "events", "usage_sessions"}

func execCount(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sharingForks lists the forks that read part of their history from id's rows.
//
// INDEXED BY here and in purgeCandidates: without statistics SQLite prefers the
// primary key's tenant_id prefix (every session of the tenant) to the parent index
// as soon as the query reads a column the index does not cover.
func sharingForks(ctx context.Context, q querier, tenant, id string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM sessions INDEXED BY sessions_by_parent
		WHERE tenant_id = ? AND parent_id = ? AND prefix_shared = 1 ORDER BY id`, tenant, id)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	})
}

// detachFork makes a fork store its inherited prefix itself: every message of its
// lineage below its own segment is copied under the fork's id (new ids and gids,
// same seqs and running totals), indexed for search, and the fork stops sharing.
// The copies are no events of the live feed (in_feed 0): the fork did not
// append them, and readers of it have seen its history already.
func (s *Store) detachFork(ctx context.Context, tx *sql.Tx, tenant, fork string) error {
	segs, err := lineage(ctx, tx, tenant, fork)
	if err != nil {
		return err
	}
	// The copies get new gids, so the indexer indexes them as new messages.
	for _, g := range segs {
		if g.owner == fork {
			continue
		}
		if err := s.copySegment(ctx, tx, tenant, fork, g); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE sessions SET prefix_shared = 0 WHERE tenant_id = ? AND id = ?`, tenant, fork)
	return err
}

// copySegment copies one stored segment of a lineage under fork, copyChunk rows
// at a time so that a long prefix is never held in memory at once.
func (s *Store) copySegment(ctx context.Context, tx *sql.Tx, tenant, fork string, g segment) error {
	s.usage.invalidate() // the copies are no appends' (usagefold.go)
	type row struct {
		seq                          int64
		role, content                string
		name, toolCalls, toolCallID  sql.NullString
		agentID, mdl                 sql.NullString
		tokens, createdAt, cumTokens int64
		cost, cumCost                float64
		metadata                     string
		parts, providerItem          sql.NullString
		isError, cumTurns            int64
		clientID                     sql.NullString
	}
	after := g.lo
	for after < g.hi {
		rows, err := tx.QueryContext(ctx, `SELECT seq, role, content, name, tool_calls, tool_call_id, agent_id, model,
			tokens, cost, metadata, created_at, cum_tokens, cum_cost, parts, is_error, provider_item, cum_turns, client_id FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
			tenant, g.owner, after, g.hi, copyChunk)
		if err != nil {
			return err
		}
		chunk, err := collect(rows, func(sc scanner) (row, error) {
			var r row
			err := sc.Scan(&r.seq, &r.role, &r.content, &r.name, &r.toolCalls, &r.toolCallID, &r.agentID, &r.mdl,
				counterInt{&r.tokens}, counterFloat{&r.cost}, &r.metadata, &r.createdAt, counterInt{&r.cumTokens}, counterFloat{&r.cumCost},
				&r.parts, &r.isError, &r.providerItem, &r.cumTurns, &r.clientID)
			return r, err
		})
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			break
		}
		for _, r := range chunk {
			if _, err := tx.StmtContext(ctx, s.st.insertMessage).ExecContext(ctx, tenant, fork, r.seq, newID(model.PrefixMessage),
				r.role, r.content, r.name, r.toolCalls, r.toolCallID, r.agentID, r.mdl, r.tokens, r.cost, r.metadata,
				r.createdAt, nil, nil, s.nextGID(), r.cumTokens, r.cumCost, r.parts, r.isError, r.providerItem, r.cumTurns, false, r.clientID); err != nil {
				return fmt.Errorf("copy seq %d of %s into fork %s: %w", r.seq, g.owner, fork, err)
			}
			after = r.seq
		}
	}
	// The copies are the fork's now, with gids the usage folder has not
	// reached: their usage follows (the parent's goes when its rows do).
	// The copies reference the files their originals did, and answer the calls
	// theirs did.
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO message_files (tenant_id, session_id, seq, file_id, user_id)
		SELECT tenant_id, ?, seq, file_id, user_id FROM message_files WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ?`,
		fork, tenant, g.owner, g.lo, g.hi); err != nil {
		return err
	}
	return copyToolRows(ctx, tx, tenant, fork, g)
}

// ExpiredTenants lists, in order, the tenants that have sessions, archival
// passages or items whose expires_at is before cutoff: the expiry sweep, which spans
// tenants, purges each of them (PurgeSessions with Expired). It reads the
// sessions_expiring and passages_expiring indexes, whose range before cutoff
// holds only the rows waiting for the sweep. Errors: KindUnavailable.
func (s *Store) ExpiredTenants(ctx context.Context, cutoff model.Time) ([]string, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT tenant_id FROM sessions INDEXED BY sessions_expiring
			WHERE expires_at IS NOT NULL AND expires_at < ?1
		UNION SELECT tenant_id FROM passages INDEXED BY passages_expiring
			WHERE expires_at IS NOT NULL AND expires_at < ?1
		UNION SELECT tenant_id FROM items INDEXED BY items_expiring
			WHERE expires_at IS NOT NULL AND expires_at < ?1
		ORDER BY 1`, int64(cutoff))
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collect(rows, func(sc scanner) (string, error) {
		var t string
		return t, sc.Scan(&t)
	})
	return out, mapErr(err)
}
