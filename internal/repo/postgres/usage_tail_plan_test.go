package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// GET /v1/usage adds to the rollups the messages not folded yet (the tail):
// on a tenant with many events, every usage read reaches the tail through a
// range of an index past usage_state.folded, not by reading every event of
// the tenant and filtering (1.6 s at 1M messages, make scale). Checked on
// the plan of a table with rows and statistics, since an empty one's plan
// proves nothing.
func TestUsageTailReadsPastFoldedPG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	_ = mustOpenURL(t, url)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, fill := range []string{
		`INSERT INTO sessions (tenant_id, id, status, metadata, created_at, updated_at)
			SELECT 't', 's' || g, 'active', '{}', 0, 0 FROM generate_series(0, 999) g`,
		`INSERT INTO messages (tenant_id, session_id, seq, id, role, content, tokens, cost, created_at, gid, cum_tokens, cum_cost)
			SELECT 't', 's' || (g % 1000), g, 'm' || g, 'user', 'hi', 10, 0.01, (g % 365) * 86400000::bigint, g, 0, 0
			FROM generate_series(1, 100000) g`,
		`INSERT INTO events (tenant_id, session_id, type, message_id, seq, created_at, pos)
			SELECT 't', 's' || (g % 1000), 'message.appended', 'm' || g, g, 0, g FROM generate_series(1, 100000) g`,
		`UPDATE usage_state SET folded = 100000`,
		`ANALYZE sessions`, `ANALYZE messages`, `ANALYZE events`,
	} {
		if _, err := conn.Exec(ctx, fill); err != nil {
			t.Fatal(err)
		}
	}
	for _, by := range []model.UsageGroupBy{model.UsageByDay, model.UsageByAgent, model.UsageByModel, model.UsageBySession} {
		for _, agent := range []string{"", "a"} {
			name := fmt.Sprintf("usage by %s, agent %q", by, agent)
			q, args := postgres.UsageQueryForTest("t", model.UsageQuery{GroupBy: by, FromDay: 0, ToDay: 30000, AgentID: agent, Limit: 10})
			rows, err := conn.Query(ctx, `EXPLAIN `+q, args...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, line)
			}
			rows.Close()
			text := strings.Join(plan, "\n")
			if !strings.Contains(text, "Index Cond: (pos > $") || strings.Contains(text, "(pos IS NULL) OR") {
				t.Errorf("%s does not read its tail as a range past folded:\n%s", name, text)
			}
		}
	}
}
