package postgres

import (
	"context"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// CheckIntegrity checks, for the tenant, session counters against the messages
// (a fork that shares its prefix along its lineage), rows whose session is
// missing, and the search index against the messages, from one snapshot
// (REPEATABLE READ), so concurrent writes of any process cannot show as drift.
// PostgreSQL checks its own pages; IntegrityCheck says whether it answers.
// With repairCounters, drifting counters are first set to what the messages
// say, in one transaction holding the sessions' rows.
// integrityChecks is how many checks CheckIntegrity reports its progress in.
const integrityChecks = 4

func (s *Store) CheckIntegrity(ctx context.Context, tenant string, repairCounters bool) (model.IntegrityReport, error) {
	rep := model.IntegrityReport{CounterDrift: []model.CounterDrift{}, IndexDrift: []model.IndexDrift{},
		Repaired: []model.CounterDrift{}}
	if repairCounters {
		err := s.tx(ctx, func(tx pgx.Tx) error {
			rep.Repaired = []model.CounterDrift{}
			drift, err := integrityDrift(ctx, tx, tenant, true)
			if err != nil {
				return err
			}
			for _, d := range drift {
				a := d.actual
				if _, err := tx.Exec(ctx, `UPDATE sessions SET message_count = $1, last_seq = $2, total_tokens = $3, total_cost = $4
					WHERE tenant_id = $5 AND id = $6`, a.count, a.lastSeq, a.tokens, a.cost, tenant, d.id); err != nil {
					return err
				}
				rep.Repaired = append(rep.Repaired, d.fields...)
			}
			return nil
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
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		repo.ReportProgress(ctx, "counters", 1, integrityChecks)
		drift, err := integrityDrift(ctx, tx, tenant, false)
		if err != nil {
			return err
		}
		for _, d := range drift {
			rep.CounterDrift = append(rep.CounterDrift, d.fields...)
		}
		repo.ReportProgress(ctx, "orphans", 2, integrityChecks)
		if err := tx.QueryRow(ctx, `SELECT
			(SELECT COUNT(*) FROM messages m WHERE m.tenant_id = $1 AND NOT EXISTS
				(SELECT 1 FROM sessions s WHERE s.tenant_id = m.tenant_id AND s.id = m.session_id)),
			(SELECT COUNT(*) FROM checkpoints c WHERE c.tenant_id = $1 AND NOT EXISTS
				(SELECT 1 FROM sessions s WHERE s.tenant_id = c.tenant_id AND s.id = c.session_id)),
			(SELECT COUNT(*) FROM request_keys k WHERE k.tenant_id = $1 AND NOT EXISTS
				(SELECT 1 FROM sessions s WHERE s.tenant_id = k.tenant_id AND s.id = k.session_id)),
			(SELECT COUNT(*) FROM sessions f WHERE f.tenant_id = $1 AND f.prefix_shared = 1 AND f.parent_id IS NOT NULL
				AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.tenant_id = f.tenant_id AND p.id = f.parent_id))`,
			tenant).Scan(&rep.Orphans.Messages, &rep.Orphans.Checkpoints, &rep.Orphans.RequestKeys, &rep.Orphans.Forks); err != nil {
			return err
		}
		repo.ReportProgress(ctx, "index", 3, integrityChecks)
		// The index is kept by the inserting statement's trigger: a message
		// without its part 0 means the trigger was dropped.
		rows, err := tx.Query(ctx, `SELECT m.session_id, COUNT(*) FROM messages m WHERE m.tenant_id = $1
			AND NOT EXISTS (SELECT 1 FROM message_search ms WHERE ms.tenant_id = m.tenant_id
				AND ms.session_id = m.session_id AND ms.seq = m.seq AND ms.part = 0)
			GROUP BY m.session_id ORDER BY m.session_id`, tenant)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d := model.IndexDrift{Kind: model.IndexMissingRows, Rows: new(int64)}
			if err := rows.Scan(&d.SessionID, d.Rows); err != nil {
				return err
			}
			rep.IndexDrift = append(rep.IndexDrift, d)
		}
		return rows.Err()
	})
	if err != nil {
		return rep, mapErr(err)
	}
	rep.OK = rep.IntegrityCheck == "ok" && len(rep.CounterDrift) == 0 && len(rep.IndexDrift) == 0 &&
		rep.Orphans == (model.OrphanCounts{})
	repo.ReportProgress(ctx, "index", integrityChecks, integrityChecks)
	return rep, nil
}

// integrityCounters are a session's running totals.
type integrityCounters struct {
	count, lastSeq, tokens int64
	cost                   float64
}

type integritySessionDrift struct {
	id     string
	actual integrityCounters
	fields []model.CounterDrift
}

// integrityDrift compares every session's counters with its messages; with
// lock, the sessions' rows are locked (a repair's read).
func integrityDrift(ctx context.Context, tx pgx.Tx, tenant string, lock bool) ([]integritySessionDrift, error) {
	forUpdate := ""
	if lock {
		forUpdate = " FOR UPDATE"
	}
	type row struct {
		id     string
		shared int
		stored integrityCounters
	}
	rows, err := tx.Query(ctx, `SELECT id, prefix_shared, message_count, last_seq, total_tokens, total_cost FROM sessions
		WHERE tenant_id = $1 ORDER BY id`+forUpdate, tenant)
	if err != nil {
		return nil, err
	}
	var list []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.shared, &r.stored.count, &r.stored.lastSeq, &r.stored.tokens, &r.stored.cost); err != nil {
			rows.Close()
			return nil, err
		}
		list = append(list, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []integritySessionDrift
	for _, r := range list {
		segs := []lineageSegment{{owner: r.id, lo: 0, hi: math.MaxInt64}}
		if r.shared == 1 {
			if segs, err = lineagePG(ctx, tx, tenant, r.id); err != nil {
				if model.AsError(err).Kind == model.KindInternal {
					continue // an ancestor is missing: counted as an orphaned fork
				}
				return nil, err
			}
		}
		var actual integrityCounters
		for _, g := range segs {
			var part integrityCounters
			// NUMERIC sums: a damaged row cannot overflow the check.
			if err := tx.QueryRow(ctx, `SELECT COUNT(*), COALESCE(MAX(seq), 0), COALESCE(SUM(tokens::numeric), 0)::float8,
				COALESCE(SUM(cost), 0) FROM messages WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4`,
				tenant, g.owner, g.lo, g.hi).Scan(&part.count, &part.lastSeq, floatToInt{&part.tokens}, &part.cost); err != nil {
				return nil, err
			}
			actual.count += part.count
			actual.lastSeq = max(actual.lastSeq, part.lastSeq)
			actual.tokens += part.tokens
			actual.cost += part.cost
		}
		d := integritySessionDrift{id: r.id, actual: actual}
		add := func(field string, s, a float64) {
			d.fields = append(d.fields, model.CounterDrift{SessionID: r.id, Field: field, Stored: s, Actual: a})
		}
		st := r.stored
		if st.count != actual.count {
			add("message_count", float64(st.count), float64(actual.count))
		}
		if st.lastSeq != actual.lastSeq {
			add("last_seq", float64(st.lastSeq), float64(actual.lastSeq))
		}
		if st.tokens != actual.tokens {
			add("total_tokens", float64(st.tokens), float64(actual.tokens))
		}
		if math.Abs(st.cost-actual.cost) > 1e-9*math.Max(1, math.Abs(actual.cost)) {
			add("total_cost", st.cost, actual.cost)
		}
		if len(d.fields) > 0 {
			out = append(out, d)
		}
	}
	return out, nil
}

// floatToInt scans a float8 total into an int64 counter, clamped.
type floatToInt struct{ p *int64 }

func (f floatToInt) Scan(src any) error {
	v, _ := src.(float64)
	switch {
	case v >= math.MaxInt64:
		*f.p = math.MaxInt64
	case v <= math.MinInt64:
		*f.p = math.MinInt64
	default:
		*f.p = int64(v)
	}
	return nil
}
