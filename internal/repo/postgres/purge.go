package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// passageBatchPG and itemBatchPG bound the expired passages and items one
// transaction deletes; the sessions' batches are bounded as SQLite's
// (repo.PurgeBatch, repo.PurgeBatchRows), so that no transaction holds its
// locks for long.
const (
	passageBatchPG = 500
	itemBatchPG    = 500
)

// PurgeSession erases a session for good: its messages (their search rows
// with them), checkpoints, idempotency keys, compactions and file references,
// in one transaction. Forks that share its prefix first take it over, as on
// SQLite (sqlite.Store.PurgeSession): their copies get new message ids and no
// idempotency keys. Errors: KindNotFound.
func (s *Store) PurgeSession(ctx context.Context, tenant, id string) error {
	return s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, _, err := purgeSessionTxPG(ctx, tx, tenant, id)
		return err
	})
}

// PurgeSessions erases the tenant's sessions a purge request picks, each as
// PurgeSession does, in transactions of bounded size, leaves first
// (repo.PurgeSessions, as on SQLite). Errors: KindUnavailable, context errors.
func (s *Store) PurgeSessions(ctx context.Context, tenant string, in model.PurgeRequest) (model.PurgeResult, error) {
	return repo.PurgeSessions(ctx, purgerPG{s}, tenant, in)
}

// purgerPG is repo.Purger on PostgreSQL.
type purgerPG struct{ s *Store }

func (p purgerPG) PurgeCount(ctx context.Context, tenant string, in model.PurgeRequest, cutoff model.Time) (model.PurgeResult, error) {
	out := model.PurgeResult{DryRun: true}
	match := purgeMatchPG(in)
	err := p.s.pool.QueryRow(ctx, `SELECT
		(SELECT COUNT(*) FROM sessions s WHERE s.tenant_id = $1 AND `+match("s")+`),
		(SELECT COUNT(*) FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
			WHERE s.tenant_id = $1 AND `+match("s")+`),
		(SELECT COUNT(*) FROM checkpoints c JOIN sessions s ON s.tenant_id = c.tenant_id AND s.id = c.session_id
			WHERE s.tenant_id = $1 AND `+match("s")+`),
		(SELECT COUNT(*) FROM passages WHERE $4::boolean AND tenant_id = $1 AND expires_at IS NOT NULL AND expires_at < $3),
		(SELECT COUNT(*) FROM items WHERE $4::boolean AND tenant_id = $1 AND expires_at IS NOT NULL AND expires_at < $3)`,
		tenant, string(in.Status), int64(cutoff), in.Expired).Scan(&out.Sessions, &out.Messages, &out.Checkpoints, &out.Passages, &out.Items)
	return out, mapErr(err)
}

func (p purgerPG) PurgeBatch(ctx context.Context, tenant string, in model.PurgeRequest, cutoff model.Time, after *repo.PurgeCursor) (model.PurgeResult, *repo.PurgeCursor, error) {
	var (
		batch model.PurgeResult
		last  *repo.PurgeCursor
	)
	err := p.s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		batch, last = model.PurgeResult{}, nil
		picked, err := purgeCandidatesPG(ctx, tx, tenant, purgeMatchPG(in), in.Status, cutoff, after)
		if err != nil {
			return err
		}
		for i := range picked {
			msgs, ckps, err := purgeSessionTxPG(ctx, tx, tenant, picked[i].ID)
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

func (p purgerPG) PurgeExpiredPassages(ctx context.Context, tenant string, cutoff model.Time) (int64, error) {
	return p.s.purgeExpiredPassagesPG(ctx, tenant, cutoff)
}

func (p purgerPG) PurgeExpiredItems(ctx context.Context, tenant string, cutoff model.Time) (int64, error) {
	return p.s.purgeExpiredItemsPG(ctx, tenant, cutoff)
}

// purgeMatchPG is the condition a purge picks sessions by, over the table
// alias a, with $2 the status and $3 the cutoff, as SQLite's purgeMatch.
func purgeMatchPG(in model.PurgeRequest) func(a string) string {
	if in.Expired {
		return func(a string) string {
			return "$2::text = '' AND " + a + ".expires_at IS NOT NULL AND " + a + ".expires_at < $3"
		}
	}
	return func(a string) string { return a + ".status = $2 AND " + a + ".updated_at < $3" }
}

// purgeExpiredPassagesPG deletes the tenant's passages whose expires_at is
// before cutoff, passageBatchPG to a transaction, and counts them.
func (s *Store) purgeExpiredPassagesPG(ctx context.Context, tenant string, cutoff model.Time) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM passages WHERE pk IN (SELECT pk FROM passages
				WHERE tenant_id = $1 AND expires_at IS NOT NULL AND expires_at < $2 LIMIT $3 FOR UPDATE SKIP LOCKED)`,
				tenant, int64(cutoff), passageBatchPG)
			n = tag.RowsAffected()
			return err
		})
		total += n
		if err != nil || n < passageBatchPG {
			return total, err
		}
	}
}

// purgeCandidatesPG picks and locks the next batch after the cursor, in
// (created_at, id) order, ids bytewise as SQLite compares them: matching
// sessions that no matching fork shares a prefix with (leaves first), up to
// purgeBatchPG sessions or about purgeBatchRowsPG messages, at least one.
//
// The lock makes the pick hold until the commit: a session that another
// process appended to or reopened while this waited for its row no longer
// matches (the locking read checks the row's newest version) and is left.
func purgeCandidatesPG(ctx context.Context, tx pgx.Tx, tenant string, match func(string) string, status model.Status, cutoff model.Time, after *repo.PurgeCursor) ([]repo.PurgeCursor, error) {
	cond, args := "", []any{tenant, string(status), int64(cutoff), repo.PurgeBatch}
	if after != nil {
		cond, args = ` AND (s.created_at, s.id COLLATE "C") > ($5, $6)`, append(args, after.CreatedAt, after.ID)
	}
	rows, err := tx.Query(ctx, `SELECT s.created_at, s.id, s.message_count FROM sessions s
		WHERE s.tenant_id = $1 AND `+match("s")+cond+`
		AND NOT EXISTS (SELECT 1 FROM sessions c
			WHERE c.tenant_id = s.tenant_id AND c.parent_id IS NOT NULL AND c.parent_id = s.id
			AND c.prefix_shared = 1 AND `+match("c")+`)
		ORDER BY s.created_at, s.id COLLATE "C" LIMIT $4 FOR UPDATE OF s`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return repo.TakeCandidates(rows)
}

// purgeSessionTxPG erases one session inside tx, after its sharing forks have
// taken their prefixes over, and returns how many messages and checkpoints
// it stored. The session's row is locked first: an append, rewind or fork of
// it from another process either commits before (and its rows are erased
// with the rest) or finds the session gone.
func purgeSessionTxPG(ctx context.Context, tx pgx.Tx, tenant, id string) (msgs, ckps int64, err error) {
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, model.NotFound("session", id)
	}
	if err != nil {
		return 0, 0, err
	}
	children, err := forkLockSharingPG(ctx, tx, tenant, id, -1)
	if err != nil {
		return 0, 0, err
	}
	for _, child := range children {
		if err := forkDetachPG(ctx, tx, tenant, child); err != nil {
			return 0, 0, err
		}
	}
	if err := releaseFilesPG(ctx, tx, tenant, id, 0); err != nil {
		return 0, 0, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM message_search WHERE tenant_id = $1 AND session_id = $2`, tenant, id); err != nil {
		return 0, 0, err
	}
	b := &pgx.Batch{}
	queueTakeBackUsagePG(b, tenant, id, 0)
	if err := appendSendPG(ctx, tx, b); err != nil {
		return 0, 0, err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM messages WHERE tenant_id = $1 AND session_id = $2`, tenant, id)
	if err != nil {
		return 0, 0, err
	}
	msgs = tag.RowsAffected()
	if tag, err = tx.Exec(ctx, `DELETE FROM checkpoints WHERE tenant_id = $1 AND session_id = $2`, tenant, id); err != nil {
		return 0, 0, err
	}
	ckps = tag.RowsAffected()
	b = &pgx.Batch{}
	// Its events go too, as on SQLite: a purge leaves nothing of the session.
	for _, table := range purgedTables {
		b.Queue(`DELETE FROM `+table+` WHERE tenant_id = $1 AND session_id = $2`, tenant, id)
	}
	b.Queue(`DELETE FROM sessions WHERE tenant_id = $1 AND id = $2`, tenant, id)
	if err := appendSendPG(ctx, tx, b); err != nil {
		return 0, 0, err
	}
	return msgs, ckps, nil
}

// purgedTables are the tables besides messages and checkpoints that hold a
// session's rows under (tenant_id, session_id); each has an index that
// leads with those two (TestPurgeDeletesReadTheSessionsRowsOnlyPG).
var purgedTables = []string{"request_keys", "rewound_keys", "compactions", "checkpoint_writes", "tool_calls", "tool_results", "events", "usage_sessions"}

// ExpiredTenants lists, in order (bytewise, as SQLite's), the tenants that
// have sessions, archival passages or items whose expires_at is before cutoff, for
// the expiry sweep, as SQLite's (sqlite.Store.ExpiredTenants).
// Errors: KindUnavailable.
func (s *Store) ExpiredTenants(ctx context.Context, cutoff model.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id FROM (
			SELECT tenant_id FROM sessions WHERE expires_at IS NOT NULL AND expires_at < $1
			UNION SELECT tenant_id FROM passages WHERE expires_at IS NOT NULL AND expires_at < $1
			UNION SELECT tenant_id FROM items WHERE expires_at IS NOT NULL AND expires_at < $1) t
		ORDER BY tenant_id COLLATE "C"`, int64(cutoff))
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, mapErr(err)
}

// purgeExpiredItemsPG is SQLite's purgeExpiredItems.
func (s *Store) purgeExpiredItemsPG(ctx context.Context, tenant string, cutoff model.Time) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `DELETE FROM items WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM items
				WHERE tenant_id = $1 AND expires_at IS NOT NULL AND expires_at < $2 LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING id`,
				tenant, int64(cutoff), itemBatchPG)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			n = int64(len(ids))
			_, err = tx.Exec(ctx, `DELETE FROM item_vectors WHERE tenant_id = $1 AND item_id = ANY($2::text[])`, tenant, ids)
			return err
		})
		total += n
		if err != nil || n < itemBatchPG {
			return total, err
		}
	}
}
