package postgres

import (
	"context"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// allSeqsPG is the upper bound of "every seq" for the usage statements.
const allSeqsPG = math.MaxInt64

// addUsagePG adds to the rollups, in tx, the usage of the messages stored
// under session with seq in (after, upto] that have no event of their own (a
// fork's copies, an import's messages): the folder never sees those, so they
// are counted when they are stored.
func addUsagePG(ctx context.Context, tx pgx.Tx, tenant, session string, after, upto int64) error {
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
			COUNT(*), SUM(m.tokens), SUM(m.cost)
		FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
		WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.seq > $3 AND m.seq <= $4
		GROUP BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = usage_daily.messages + excluded.messages,
			tokens = usage_daily.tokens + excluded.tokens, cost = usage_daily.cost + excluded.cost`,
		tenant, session, after, upto)
	b.Queue(`INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
		SELECT tenant_id, created_at / 86400000, session_id, COUNT(*), SUM(tokens), SUM(cost)
		FROM messages WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4
		GROUP BY 1, 2, 3
		ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = usage_sessions.messages + excluded.messages,
			tokens = usage_sessions.tokens + excluded.tokens, cost = usage_sessions.cost + excluded.cost`,
		tenant, session, after, upto)
	return appendSendPG(ctx, tx, b)
}

// usageTailPG is true of a message the rollups do not count yet: it has an
// event (it was appended) that the folder has not passed, numbered or not.
const usageTailPG = `EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = m.tenant_id AND e.session_id = m.session_id
	AND e.seq = m.seq AND e.message_id = m.id AND e.type = 'message.appended'
	AND (e.pos IS NULL OR e.pos > (SELECT folded FROM usage_state WHERE one)))`

// queueTakeBackUsagePG queues what takes from the rollups the usage of the
// session's messages with seq above after that they count (all but the
// tail), before the messages go. It first takes usage_state's row lock,
// shared, and holds it to the commit: a fold cannot move meanwhile (it takes
// the lock exclusive, skipping a round when it cannot), and the statements
// after the lock see every fold committed before it.
func queueTakeBackUsagePG(b *pgx.Batch, tenant, session string, after int64) {
	b.Queue(`SELECT folded FROM usage_state WHERE one FOR SHARE`)
	b.Queue(`INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
			-COUNT(*), -SUM(m.tokens), -SUM(m.cost)
		FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
		WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.seq > $3 AND NOT `+usageTailPG+`
		GROUP BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = usage_daily.messages + excluded.messages,
			tokens = usage_daily.tokens + excluded.tokens, cost = usage_daily.cost + excluded.cost`,
		tenant, session, after)
	b.Queue(`INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, m.session_id, -COUNT(*), -SUM(m.tokens), -SUM(m.cost)
		FROM messages m WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.seq > $3 AND NOT `+usageTailPG+`
		GROUP BY 1, 2, 3
		ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = usage_sessions.messages + excluded.messages,
			tokens = usage_sessions.tokens + excluded.tokens, cost = usage_sessions.cost + excluded.cost`,
		tenant, session, after)
}

// usageTailFromPG is the tail of a tenant's days (usageTailPG), read from
// the tenant's events: those numbered past folded and those not numbered
// yet, each through an index (events_by_tenant's range past folded,
// events_unsequenced). Two branches, not one OR: with the OR the planner
// reads every event of the tenant and filters (1.6 s at 1M messages).
const usageTailFromPG = `FROM (
		SELECT tenant_id, session_id, seq, message_id FROM events
			WHERE tenant_id = $1 AND pos > (SELECT folded FROM usage_state WHERE one) AND type = 'message.appended'
		UNION ALL
		SELECT tenant_id, session_id, seq, message_id FROM events
			WHERE pos IS NULL AND tenant_id = $1 AND type = 'message.appended') e
	JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
	JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
	WHERE m.created_at / 86400000 >= $2 AND m.created_at / 86400000 <= $3`

// Usage sums the tenant's stored messages of q's days (repo.Usage).
func (s *Store) Usage(ctx context.Context, tenant string, q model.UsageQuery) (model.Usage, error) {
	query, args := usageQueryPG(tenant, q)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return model.Usage{}, mapErr(err)
	}
	defer rows.Close()
	return scanUsagePG(q, rows)
}

// usageQueryPG is the statement that answers q: the rollups of its days plus
// the tail, summed by q's key, in one snapshot.
func usageQueryPG(tenant string, q model.UsageQuery) (query string, args []any) {
	args = []any{tenant, q.FromDay, q.ToDay}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	switch q.GroupBy {
	case model.UsageBySession:
		// A session past its expires_at is hidden here as everywhere it is
		// named. The agent is the session's.
		args = append(args, int64(model.Now()))
		join, agent := "", ""
		if q.AgentID != "" {
			join = ` JOIN sessions s ON s.tenant_id = u.tenant_id AND s.id = u.session_id AND s.agent_id = $5`
			agent = ` AND s.agent_id = $5`
			args = append(args, q.AgentID)
		}
		query = `SELECT k, SUM(n)::bigint, SUM(t)::bigint, SUM(c) FROM (
				SELECT u.session_id AS k, u.messages AS n, u.tokens AS t, u.cost AS c FROM usage_sessions u` + join + `
					WHERE u.tenant_id = $1 AND u.day >= $2 AND u.day <= $3
				UNION ALL
				SELECT m.session_id, 1, m.tokens, m.cost ` + usageTailFromPG + agent + `
			) x
			WHERE NOT EXISTS (SELECT 1 FROM sessions e WHERE e.tenant_id = $1 AND e.id = x.k AND e.expires_at <= $4)
			GROUP BY k HAVING SUM(n) > 0 ORDER BY SUM(t) DESC, k COLLATE "C" LIMIT ` + strconv.Itoa(limit)
	default:
		key := map[model.UsageGroupBy][2]string{
			model.UsageByDay:   {"day::text", "(m.created_at / 86400000)::text"},
			model.UsageByAgent: {"agent_id", "COALESCE(m.agent_id, s.agent_id, '')"},
			model.UsageByModel: {"model", "COALESCE(m.model, '')"},
		}[q.GroupBy]
		agent, tailAgent := "", ""
		if q.AgentID != "" {
			agent, tailAgent = ` AND agent_id = $4`, ` AND COALESCE(m.agent_id, s.agent_id, '') = $4`
			args = append(args, q.AgentID)
		}
		query = `SELECT k, SUM(n)::bigint, SUM(t)::bigint, SUM(c) FROM (
				SELECT ` + key[0] + ` AS k, messages AS n, tokens AS t, cost AS c FROM usage_daily
					WHERE tenant_id = $1 AND day >= $2 AND day <= $3` + agent + `
				UNION ALL
				SELECT ` + key[1] + `, 1, m.tokens, m.cost ` + usageTailFromPG + tailAgent + `
			) x GROUP BY k HAVING SUM(n) > 0`
		if q.GroupBy == model.UsageByDay {
			query += ` ORDER BY k::bigint`
		} else {
			query += ` ORDER BY SUM(t) DESC, k COLLATE "C" LIMIT ` + strconv.Itoa(limit)
		}
	}
	return query, args
}

func scanUsagePG(q model.UsageQuery, rows pgx.Rows) (model.Usage, error) {
	var out []model.UsageRow
	for rows.Next() {
		var (
			key string
			r   model.UsageRow
		)
		if err := rows.Scan(&key, &r.Messages, &r.Tokens, &r.Cost); err != nil {
			return model.Usage{}, mapErr(err)
		}
		if q.GroupBy == model.UsageByDay {
			day, err := strconv.ParseInt(key, 10, 64)
			if err != nil {
				return model.Usage{}, model.Internal(err)
			}
			key = repo.UsageDate(day)
		}
		if key != "" {
			r.Key = &key
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return model.Usage{}, mapErr(err)
	}
	return repo.UsageFinish(q, out), nil
}
