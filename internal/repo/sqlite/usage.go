package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// takeBackUsage takes from the rollups the usage of the session's messages
// with seq above after that they count: those the folder has passed
// (usagefold.go). The rest were never added. It runs in the writer's
// transaction before the messages go, so the rollups stay the sums over what
// is stored up to folded.
func takeBackUsage(ctx context.Context, tx *sql.Tx, tenant, session string, after int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
			-COUNT(*), -SUM(m.tokens), -SUM(m.cost)
		FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
		WHERE m.tenant_id = ?1 AND m.session_id = ?2 AND m.seq > ?3 AND m.gid <= (SELECT folded FROM usage_state WHERE one = 1)
		GROUP BY 1, 2, 3, 4
		ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = messages + excluded.messages,
			tokens = tokens + excluded.tokens, cost = cost + excluded.cost`,
		tenant, session, after); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
		SELECT tenant_id, created_at / 86400000, session_id, -COUNT(*), -SUM(tokens), -SUM(cost)
		FROM messages WHERE tenant_id = ?1 AND session_id = ?2 AND seq > ?3 AND gid <= (SELECT folded FROM usage_state WHERE one = 1)
		GROUP BY 1, 2, 3
		ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = messages + excluded.messages,
			tokens = tokens + excluded.tokens, cost = cost + excluded.cost`,
		tenant, session, after)
	return err
}

// usageTail is the messages the folder has not reached: a read adds them to
// the rollups, in the same statement, so that it sees every stored message
// once whatever the folder's lag.
const usageTail = `FROM messages m INDEXED BY messages_by_gid
	JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
	WHERE m.gid > (SELECT folded FROM usage_state WHERE one = 1) AND m.tenant_id = ?1
		AND m.created_at / 86400000 >= ?2 AND m.created_at / 86400000 <= ?3`

// Usage sums the tenant's stored messages of q's days (repo.Usage).
func (s *Store) Usage(ctx context.Context, tenant string, q model.UsageQuery) (model.Usage, error) {
	query, args := usageQuery(tenant, q)
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	return scanUsage(q, rows, err)
}

// usageQuery is the statement that answers q: the rollups of its days plus
// the tail, summed by q's key.
func usageQuery(tenant string, q model.UsageQuery) (query string, args []any) {
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
			join = ` JOIN sessions s ON s.tenant_id = u.tenant_id AND s.id = u.session_id AND s.agent_id = ?5`
			agent = ` AND s.agent_id = ?5`
			args = append(args, q.AgentID)
		}
		query = `SELECT k, SUM(n), SUM(t), SUM(c) FROM (
				SELECT u.session_id AS k, u.messages AS n, u.tokens AS t, u.cost AS c FROM usage_sessions u` + join + `
					WHERE u.tenant_id = ?1 AND u.day >= ?2 AND u.day <= ?3
				UNION ALL
				SELECT m.session_id, 1, m.tokens, m.cost ` + usageTail + agent + `
			) x
			WHERE NOT EXISTS (SELECT 1 FROM sessions e WHERE e.tenant_id = ?1 AND e.id = x.k AND e.expires_at <= ?4)
			GROUP BY k HAVING SUM(n) > 0 ORDER BY SUM(t) DESC, k LIMIT ` + itoa(int64(limit))
	default:
		key := map[model.UsageGroupBy][2]string{
			model.UsageByDay:   {"day", "m.created_at / 86400000"},
			model.UsageByAgent: {"agent_id", "COALESCE(m.agent_id, s.agent_id, '')"},
			model.UsageByModel: {"model", "COALESCE(m.model, '')"},
		}[q.GroupBy]
		agent, tailAgent := "", ""
		if q.AgentID != "" {
			agent, tailAgent = ` AND agent_id = ?4`, ` AND COALESCE(m.agent_id, s.agent_id, '') = ?4`
			args = append(args, q.AgentID)
		}
		query = `SELECT k, SUM(n), SUM(t), SUM(c) FROM (
				SELECT ` + key[0] + ` AS k, messages AS n, tokens AS t, cost AS c FROM usage_daily
					WHERE tenant_id = ?1 AND day >= ?2 AND day <= ?3` + agent + `
				UNION ALL
				SELECT ` + key[1] + `, 1, m.tokens, m.cost ` + usageTail + tailAgent + `
			) GROUP BY k HAVING SUM(n) > 0`
		if q.GroupBy == model.UsageByDay {
			query += ` ORDER BY k`
		} else {
			query += ` ORDER BY SUM(t) DESC, k LIMIT ` + itoa(int64(limit))
		}
	}
	return query, args
}

// scanUsage reads usageQuery's rows.
func scanUsage(q model.UsageQuery, rows *sql.Rows, err error) (model.Usage, error) {
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
