package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// BenchmarkUsage reads usage over a day and over a year of 1,000,000 stored
// messages (1,000 sessions, 10 agents, 4 models, spread over 365 days), from
// the rollups, beside the GROUP BY over the messages they stand for.
//
//	go test -run '^$' -bench Usage -benchtime 200x ./internal/repo/sqlite/
func BenchmarkUsage(b *testing.B) {
	const messages, sessions, days = 1_000_000, 1_000, 365
	s := mustOpen(b)
	ctx := context.Background()
	end := model.DayOf(model.Now())
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range sessions {
		agent := fmt.Sprintf("agent-%d", i%10)
		if _, err := tx.Exec(`INSERT INTO sessions (tenant_id, id, agent_id, status, metadata, created_at, updated_at)
			VALUES ('t', ?, ?, 'active', '{}', 0, 0)`, fmt.Sprintf("s%d", i), agent); err != nil {
			b.Fatal(err)
		}
	}
	ins, err := tx.Prepare(`INSERT INTO messages (tenant_id, session_id, seq, id, role, content, model, tokens, cost, metadata,
		created_at, gid, cum_tokens, cum_cost) VALUES ('t', ?, ?, ?, 'assistant', '', ?, ?, ?, '{}', ?, ?, 0, 0)`)
	if err != nil {
		b.Fatal(err)
	}
	for i := range messages {
		day := end - int64(i%days)
		if _, err := ins.Exec(fmt.Sprintf("s%d", i%sessions), i/sessions+1, fmt.Sprintf("m%d", i), fmt.Sprintf("model-%d", i%4),
			100+i%50, 0.001, day*86_400_000+int64(i%86_400_000), i+1); err != nil {
			b.Fatal(err)
		}
	}
	// The rollups as the writes keep them: the migration's statements, which
	// TestUsageRollupsFollowTheMessages holds equal to what the writes do.
	for _, q := range []string{
		`INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
		SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
			COUNT(*), SUM(m.tokens), SUM(m.cost)
		FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id GROUP BY 1, 2, 3, 4`,
		`INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
		SELECT tenant_id, created_at / 86400000, session_id, COUNT(*), SUM(tokens), SUM(cost) FROM messages GROUP BY 1, 2, 3`,
		// Every message folded, as the usage folder leaves them.
		`UPDATE usage_state SET folded = (SELECT MAX(gid) FROM messages)`,
	} {
		if _, err := tx.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		by       model.UsageGroupBy
		from, to int64
	}{
		{"day/1-day", model.UsageByDay, end, end},
		{"day/365-days", model.UsageByDay, end - days + 1, end},
		{"model/365-days", model.UsageByModel, end - days + 1, end},
		{"session/1-day", model.UsageBySession, end, end},
		{"session/365-days", model.UsageBySession, end - days + 1, end},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				u, err := s.Usage(ctx, "t", model.UsageQuery{GroupBy: tc.by, FromDay: tc.from, ToDay: tc.to})
				if err != nil || len(u.Data) == 0 {
					b.Fatal(u, err)
				}
			}
		})
	}
	b.Run("messages-group-by/365-days", func(b *testing.B) {
		for b.Loop() {
			rows, err := s.rdb.Query(`SELECT created_at / 86400000, COUNT(*), SUM(tokens), SUM(cost) FROM messages
				WHERE tenant_id = 't' GROUP BY 1`)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
		}
	})
}
