package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// CheckIntegrity checks the database: PRAGMA integrity_check over the whole file,
// then, for the tenant alone, session counters against the messages (a fork that
// shares its prefix is counted along its lineage), rows whose session is missing,
// and the conversation index against the messages. The tenant's checks read one
// snapshot, so concurrent writes cannot show as drift.
//
// With repairCounters, the writer first sets every drifting counter of the tenant
// to what the messages say, and the report lists those fixes in Repaired; the
// checks then run on the repaired data. Errors: KindUnavailable.
func (s *Store) CheckIntegrity(ctx context.Context, tenant string, repairCounters bool) (model.IntegrityReport, error) {
	rep := model.IntegrityReport{CounterDrift: []model.CounterDrift{}, IndexDrift: []model.IndexDrift{},
		Repaired: []model.CounterDrift{}}
	if repairCounters {
		err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			s.sessions.reset() // counters change under the writer's record
			fixed, err := repairCountersTx(ctx, tx, tenant)
			rep.Repaired = fixed
			return err
		})
		if err != nil {
			return rep, err
		}
	}
	var err error
	repo.ReportProgress(ctx, "integrity_check", 0, integrityChecks)
	if rep.IntegrityCheck, err = s.IntegrityCheck(ctx); err != nil {
		return rep, err
	}

	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return rep, mapErr(err)
	}
	defer tx.Rollback()
	// The index file's snapshot first: the messages read after it are at least
	// as new, so index rows can only be ahead of what their deletion queue says.
	var progress int64
	if err := tx.QueryRowContext(ctx, `SELECT next_gid FROM idx.index_state WHERE id = 1`).Scan(&progress); err != nil {
		return rep, mapErr(err)
	}
	repo.ReportProgress(ctx, "counters", 1, integrityChecks)
	drift, err := counterDrift(ctx, tx, tenant)
	if err != nil {
		return rep, mapErr(err)
	}
	for _, d := range drift {
		rep.CounterDrift = append(rep.CounterDrift, d.fields...)
	}
	repo.ReportProgress(ctx, "orphans", 2, integrityChecks)
	if rep.Orphans, err = orphans(ctx, tx, tenant); err != nil {
		return rep, mapErr(err)
	}
	repo.ReportProgress(ctx, "index", 3, integrityChecks)
	if rep.IndexDrift, err = indexDrift(ctx, tx, tenant); err != nil {
		return rep, mapErr(err)
	}
	rep.OK = rep.IntegrityCheck == "ok" && len(rep.CounterDrift) == 0 && len(rep.IndexDrift) == 0 &&
		rep.Orphans == (model.OrphanCounts{})
	repo.ReportProgress(ctx, "index", integrityChecks, integrityChecks)
	return rep, nil
}

// integrityChecks is how many checks CheckIntegrity reports its progress in:
// the file's, counters, orphans, the search index.
const integrityChecks = 4

// counters are a session's running totals.
type counters struct {
	count, lastSeq, tokens int64
	cost                   float64
}

// sessionDrift is one session whose stored counters differ from its messages.
type sessionDrift struct {
	id     string
	actual counters
	fields []model.CounterDrift
}

// counterDrift compares every session's counters with its messages: a session
// that stores its whole history in one aggregate over its rows, a fork that
// shares its prefix along its lineage. A fork whose ancestor is missing is left
// to the orphan count.
func counterDrift(ctx context.Context, q querier, tenant string) ([]sessionDrift, error) {
	var out []sessionDrift
	rows, err := q.QueryContext(ctx, `SELECT s.id, s.message_count, s.last_seq, s.total_tokens, s.total_cost,
		COUNT(m.seq), COALESCE(MAX(m.seq), 0), TOTAL(m.tokens), TOTAL(m.cost)
		FROM sessions s LEFT JOIN messages m ON m.tenant_id = s.tenant_id AND m.session_id = s.id
		WHERE s.tenant_id = ? AND s.prefix_shared = 0 GROUP BY s.id ORDER BY s.id`, tenant)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var (
			id             string
			stored, actual counters
		)
		// TOTAL, not SUM: SUM of integers fails on overflow, and this check must
		// report damaged rows rather than fail on them.
		if err := rows.Scan(&id, &stored.count, &stored.lastSeq, counterInt{&stored.tokens}, counterFloat{&stored.cost},
			&actual.count, &actual.lastSeq, counterInt{&actual.tokens}, counterFloat{&actual.cost}); err != nil {
			rows.Close()
			return nil, err
		}
		if d := compareCounters(id, stored, actual); len(d.fields) > 0 {
			out = append(out, d)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	forks, err := q.QueryContext(ctx, `SELECT id, message_count, last_seq, total_tokens, total_cost FROM sessions
		WHERE tenant_id = ? AND prefix_shared = 1 ORDER BY id`, tenant)
	if err != nil {
		return nil, err
	}
	type fork struct {
		id     string
		stored counters
	}
	list, err := collect(forks, func(sc scanner) (fork, error) {
		var f fork
		err := sc.Scan(&f.id, &f.stored.count, &f.stored.lastSeq, counterInt{&f.stored.tokens}, counterFloat{&f.stored.cost})
		return f, err
	})
	if err != nil {
		return nil, err
	}
	for _, f := range list {
		actual, err := lineageCounters(ctx, q, tenant, f.id)
		var me *model.Error
		if errors.As(err, &me) && me.Kind == model.KindInternal {
			continue // an ancestor is missing: an orphaned fork
		}
		if err != nil {
			return nil, err
		}
		if d := compareCounters(f.id, f.stored, actual); len(d.fields) > 0 {
			out = append(out, d)
		}
	}
	return out, nil
}

// lineageCounters totals the messages of a session's whole lineage.
func lineageCounters(ctx context.Context, q querier, tenant, id string) (counters, error) {
	var c counters
	segs, err := lineage(ctx, q, tenant, id)
	if err != nil {
		return c, err
	}
	for _, g := range segs {
		var part counters
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(seq), 0), TOTAL(tokens), TOTAL(cost)
			FROM messages WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ?`,
			tenant, g.owner, g.lo, g.hi).Scan(&part.count, &part.lastSeq, counterInt{&part.tokens}, counterFloat{&part.cost}); err != nil {
			return c, err
		}
		c.count += part.count
		c.lastSeq = max(c.lastSeq, part.lastSeq)
		c.tokens += part.tokens
		c.cost += part.cost
	}
	return c, nil
}

func compareCounters(id string, stored, actual counters) sessionDrift {
	d := sessionDrift{id: id, actual: actual}
	add := func(field string, s, a float64) {
		d.fields = append(d.fields, model.CounterDrift{SessionID: id, Field: field, Stored: finite(s), Actual: finite(a)})
	}
	if stored.count != actual.count {
		add("message_count", float64(stored.count), float64(actual.count))
	}
	if stored.lastSeq != actual.lastSeq {
		add("last_seq", float64(stored.lastSeq), float64(actual.lastSeq))
	}
	if stored.tokens != actual.tokens {
		add("total_tokens", float64(stored.tokens), float64(actual.tokens))
	}
	// Sums of floats depend on their order: the running total and SQL's SUM may
	// differ in the last bits without anything being wrong.
	if math.Abs(stored.cost-actual.cost) > 1e-9*math.Max(1, math.Abs(actual.cost)) {
		add("total_cost", stored.cost, actual.cost)
	}
	return d
}

// repairCountersTx sets every drifting counter of the tenant to what the messages
// say, inside the writer, and returns what it changed. updated_at is kept: a
// repair is not a change a client made.
func repairCountersTx(ctx context.Context, tx *sql.Tx, tenant string) ([]model.CounterDrift, error) {
	repo.ReportProgress(ctx, "counters", 1, integrityChecks)
	drift, err := counterDrift(ctx, tx, tenant)
	if err != nil {
		return nil, err
	}
	fixed := []model.CounterDrift{}
	for _, d := range drift {
		a := d.actual
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET message_count = ?, last_seq = ?, total_tokens = ?, total_cost = ?
			WHERE tenant_id = ? AND id = ?`,
			a.count, a.lastSeq, a.tokens, a.cost, tenant, d.id); err != nil {
			return nil, err
		}
		fixed = append(fixed, d.fields...)
	}
	return fixed, nil
}

// orphans counts the tenant's rows whose session is missing, and forks sharing a
// prefix whose parent is missing.
func orphans(ctx context.Context, q querier, tenant string) (model.OrphanCounts, error) {
	var o model.OrphanCounts
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM messages m WHERE m.tenant_id = ?1 AND NOT EXISTS
			(SELECT 1 FROM sessions s WHERE s.tenant_id = m.tenant_id AND s.id = m.session_id)),
		(SELECT COUNT(*) FROM checkpoints c WHERE c.tenant_id = ?1 AND NOT EXISTS
			(SELECT 1 FROM sessions s WHERE s.tenant_id = c.tenant_id AND s.id = c.session_id)),
		(SELECT COUNT(*) FROM request_keys k WHERE k.tenant_id = ?1 AND NOT EXISTS
			(SELECT 1 FROM sessions s WHERE s.tenant_id = k.tenant_id AND s.id = k.session_id)),
		(SELECT COUNT(*) FROM sessions f WHERE f.tenant_id = ?1 AND f.prefix_shared = 1 AND f.parent_id IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.tenant_id = f.tenant_id AND p.id = f.parent_id))`,
		tenant).Scan(&o.Messages, &o.Checkpoints, &o.RequestKeys, &o.Forks)
	return o, err
}

// indexDrift compares the tenant's conversation index with its messages: index
// rows whose message is gone (or is another message now), unless the indexer
// has yet to apply that message's deletion, and messages the index has passed
// (a gid below its progress) that have no index row. q must read the index file
// before the main one in its transaction (see CheckIntegrity), so that the
// messages it sees are never older than the index it compares them with.
func indexDrift(ctx context.Context, q querier, tenant string) ([]model.IndexDrift, error) {
	out := []model.IndexDrift{}

	for _, c := range []struct {
		kind, query string
	}{
		{model.IndexStaleRows, `SELECT f.session_id, COUNT(*) FROM idx.messages_fts f WHERE f.tenant_id = ?
			AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.gid = ` + gidOfRowIDSQL + ` AND m.tenant_id = f.tenant_id
				AND m.session_id = f.session_id AND m.seq = f.seq)
			AND NOT EXISTS (SELECT 1 FROM index_deletes d WHERE d.gid = ` + gidOfRowIDSQL + `
				AND d.id > (SELECT deletes_upto FROM idx.index_state WHERE id = 1))
			GROUP BY f.session_id ORDER BY f.session_id`},
		{model.IndexMissingRows, `SELECT m.session_id, COUNT(*) FROM messages m
			WHERE m.tenant_id = ? AND m.gid < (SELECT next_gid FROM idx.index_state WHERE id = 1)
			AND NOT EXISTS (SELECT 1 FROM idx.messages_fts f WHERE f.rowid = m.gid << 8)
			GROUP BY m.session_id ORDER BY m.session_id`},
	} {
		rows, err := q.QueryContext(ctx, c.query, tenant)
		if err != nil {
			return nil, err
		}
		found, err := collect(rows, func(sc scanner) (model.IndexDrift, error) {
			d := model.IndexDrift{Kind: c.kind, Rows: new(int64)}
			return d, sc.Scan(&d.SessionID, d.Rows)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}
