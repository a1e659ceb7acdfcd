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

// queueUsagePG queues what adds (sign +1) or takes back (sign -1) the usage
// of the messages stored under session with seq in (after, upto], in the
// batch's transaction: the rollups stay the sums over what is stored.
func queueUsagePG(b *pgx.Batch, tenant, session string, after, upto int64, sign int) {
	b.Queue(`INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
			$5 * COUNT(*), $5 * SUM(m.tokens), $5 * SUM(m.cost)
		FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
		WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.seq > $3 AND m.seq <= $4
		GROUP BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = usage_daily.messages + excluded.messages,
			tokens = usage_daily.tokens + excluded.tokens, cost = usage_daily.cost + excluded.cost`,
		tenant, session, after, upto, sign)
	b.Queue(`INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
		SELECT tenant_id, created_at / 86400000, session_id, $5 * COUNT(*), $5 * SUM(tokens), $5 * SUM(cost)
		FROM messages WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4
		GROUP BY 1, 2, 3
		ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = usage_sessions.messages + excluded.messages,
			tokens = usage_sessions.tokens + excluded.tokens, cost = usage_sessions.cost + excluded.cost`,
		tenant, session, after, upto, sign)
}

// applyUsagePG is queueUsagePG run at once in tx.
func applyUsagePG(ctx context.Context, tx pgx.Tx, tenant, session string, after, upto int64, sign int) error {
	b := &pgx.Batch{}
	queueUsagePG(b, tenant, session, after, upto, sign)
	return appendSendPG(ctx, tx, b)
}

// Usage sums the tenant's stored messages of q's days (repo.Usage).
func (s *Store) Usage(ctx context.Context, tenant string, q model.UsageQuery) (model.Usage, error) {
	var (
		query string
		args  = []any{tenant, q.FromDay, q.ToDay}
	)
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	switch q.GroupBy {
	case model.UsageBySession:
		// A session past its expires_at is hidden here as everywhere it is named.
		query = `SELECT u.session_id, SUM(u.messages)::bigint, SUM(u.tokens)::bigint, SUM(u.cost) FROM usage_sessions u`
		args = append(args, int64(model.Now()))
		if q.AgentID != "" {
			query += ` JOIN sessions s ON s.tenant_id = u.tenant_id AND s.id = u.session_id AND s.agent_id = $5`
			args = append(args, q.AgentID)
		}
		query += ` WHERE u.tenant_id = $1 AND u.day >= $2 AND u.day <= $3
			AND NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = u.tenant_id AND x.id = u.session_id AND x.expires_at <= $4)
			GROUP BY u.session_id
			HAVING SUM(u.messages) > 0 ORDER BY SUM(u.tokens) DESC, u.session_id COLLATE "C" LIMIT ` + strconv.Itoa(limit)
	default:
		key := map[model.UsageGroupBy]string{model.UsageByDay: "day::text", model.UsageByAgent: "agent_id", model.UsageByModel: "model"}[q.GroupBy]
		query = `SELECT ` + key + `, SUM(messages)::bigint, SUM(tokens)::bigint, SUM(cost) FROM usage_daily
			WHERE tenant_id = $1 AND day >= $2 AND day <= $3`
		if q.AgentID != "" {
			query += ` AND agent_id = $4`
			args = append(args, q.AgentID)
		}
		query += ` GROUP BY 1 HAVING SUM(messages) > 0`
		if q.GroupBy == model.UsageByDay {
			query += ` ORDER BY min(day)`
		} else {
			query += ` ORDER BY SUM(tokens) DESC, ` + key + ` COLLATE "C" LIMIT ` + strconv.Itoa(limit)
		}
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return model.Usage{}, mapErr(err)
	}
	defer rows.Close()
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
