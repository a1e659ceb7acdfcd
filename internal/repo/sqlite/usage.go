package sqlite

import (
	"context"
	"database/sql"
	"math"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// applyUsage adds (sign +1) or takes back (sign -1) the usage of the messages
// stored under session with seq in (after, upto], in the writer's
// transaction: the rollups stay the sums over what is stored.
func applyUsage(ctx context.Context, tx *sql.Tx, tenant, session string, after, upto int64, sign int) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
			?5 * COUNT(*), ?5 * SUM(m.tokens), ?5 * SUM(m.cost)
		FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
		WHERE m.tenant_id = ?1 AND m.session_id = ?2 AND m.seq > ?3 AND m.seq <= ?4
		GROUP BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = messages + excluded.messages,
			tokens = tokens + excluded.tokens, cost = cost + excluded.cost`,
		tenant, session, after, upto, sign); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
		SELECT tenant_id, created_at / 86400000, session_id, ?5 * COUNT(*), ?5 * SUM(tokens), ?5 * SUM(cost)
		FROM messages WHERE tenant_id = ?1 AND session_id = ?2 AND seq > ?3 AND seq <= ?4
		GROUP BY 1, 2, 3
		ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = messages + excluded.messages,
			tokens = tokens + excluded.tokens, cost = cost + excluded.cost`,
		tenant, session, after, upto, sign)
	return err
}

// allSeqs is the upper bound of "every seq" for applyUsage.
const allSeqs = math.MaxInt64

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
		query = `SELECT u.session_id, SUM(u.messages), SUM(u.tokens), SUM(u.cost) FROM usage_sessions u`
		args = append(args, int64(model.Now()))
		if q.AgentID != "" {
			query += ` JOIN sessions s ON s.tenant_id = u.tenant_id AND s.id = u.session_id AND s.agent_id = ?5`
			args = append(args, q.AgentID)
		}
		query += ` WHERE u.tenant_id = ?1 AND u.day >= ?2 AND u.day <= ?3
			AND NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = u.tenant_id AND x.id = u.session_id AND x.expires_at <= ?4)
			GROUP BY u.session_id
			HAVING SUM(u.messages) > 0 ORDER BY SUM(u.tokens) DESC, u.session_id LIMIT ` + itoa(int64(limit))
	default:
		key := map[model.UsageGroupBy]string{model.UsageByDay: "day", model.UsageByAgent: "agent_id", model.UsageByModel: "model"}[q.GroupBy]
		query = `SELECT ` + key + `, SUM(messages), SUM(tokens), SUM(cost) FROM usage_daily
			WHERE tenant_id = ?1 AND day >= ?2 AND day <= ?3`
		if q.AgentID != "" {
			query += ` AND agent_id = ?4`
			args = append(args, q.AgentID)
		}
		query += ` GROUP BY ` + key + ` HAVING SUM(messages) > 0`
		if q.GroupBy == model.UsageByDay {
			query += ` ORDER BY day`
		} else {
			query += ` ORDER BY SUM(tokens) DESC, ` + key + ` LIMIT ` + itoa(int64(limit))
		}
	}
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return model.Usage{}, mapErr(err)
	}
	defer rows.Close()
	var out []model.UsageRow
	for rows.Next() {
		var (
			key any
			r   model.UsageRow
		)
		if err := rows.Scan(&key, &r.Messages, &r.Tokens, &r.Cost); err != nil {
			return model.Usage{}, mapErr(err)
		}
		switch k := key.(type) {
		case int64:
			d := repo.UsageDate(k)
			r.Key = &d
		case string:
			if k != "" {
				r.Key = &k
			}
		case []byte:
			if len(k) > 0 {
				str := string(k)
				r.Key = &str
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return model.Usage{}, mapErr(err)
	}
	return repo.UsageFinish(q, out), nil
}
