package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// usageStore is a store with the connection its test checks it through.
type usageStore struct {
	*postgres.Store
	conn *pgx.Conn
}

// usageFromMessages is what the rollups must say: the sums over the stored
// messages, computed from them directly.
func usageFromMessages(t *testing.T, s usageStore, tenant string, by model.UsageGroupBy) map[string][3]float64 {
	t.Helper()
	key := map[model.UsageGroupBy]string{
		model.UsageByDay:     "(m.created_at / 86400000)::text",
		model.UsageByAgent:   "COALESCE(m.agent_id, s.agent_id, '')",
		model.UsageByModel:   "COALESCE(m.model, '')",
		model.UsageBySession: "m.session_id",
	}[by]
	rows, err := s.conn.Query(context.Background(), `SELECT `+key+`, COUNT(*), SUM(m.tokens)::bigint, SUM(m.cost) FROM messages m
		JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id WHERE m.tenant_id = $1 GROUP BY 1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][3]float64{}
	for rows.Next() {
		var (
			k     string
			n, tk int64
			c     float64
		)
		if err := rows.Scan(&k, &n, &tk, &c); err != nil {
			t.Fatal(err)
		}
		if by == model.UsageByDay {
			var d int64
			fmt.Sscan(k, &d)
			k = usageDateForTest(d)
		}
		out[k] = [3]float64{float64(n), float64(tk), c}
	}
	return out
}

func usageDateForTest(day int64) string {
	return model.Time(day * 86_400_000).Std().Format("2006-01-02")
}

// checkUsage compares every grouping of the rollups with the messages.
func checkUsage(t *testing.T, s usageStore, tenant, step string) {
	t.Helper()
	for _, by := range []model.UsageGroupBy{model.UsageByDay, model.UsageByAgent, model.UsageByModel, model.UsageBySession} {
		u, err := s.Usage(context.Background(), tenant, model.UsageQuery{GroupBy: by, FromDay: 0, ToDay: math.MaxInt32, Limit: 1000})
		if err != nil {
			t.Fatalf("%s: usage by %s: %v", step, by, err)
		}
		got := map[string][3]float64{}
		for _, r := range u.Data {
			k := ""
			if r.Key != nil {
				k = *r.Key
			}
			got[k] = [3]float64{float64(r.Messages), float64(r.Tokens), r.Cost}
		}
		want := usageFromMessages(t, s, tenant, by)
		if len(got) != len(want) {
			t.Errorf("%s: usage by %s = %v; the messages say %v", step, by, got, want)
			continue
		}
		for k, w := range want {
			g := got[k]
			if g[0] != w[0] || g[1] != w[1] || math.Abs(g[2]-w[2]) > 1e-9 {
				t.Errorf("%s: usage by %s, %q = %v; the messages say %v", step, by, k, g, w)
			}
		}
	}
}

// The rollups stay the sums over the stored messages through every write that
// stores or removes messages: appends (single, batch, grouped), a fork that
// detaches when its parent rewinds, a rewind, an import, a purge. Reads add
// what the folder has not passed, so they hold wherever it stands: the
// scenario runs with everything folded after each step, nothing folded by the
// test (the store's folder may), and folded halfway, so that rewinds, copies
// and purges meet folded and unfolded messages alike.
func TestUsageRollupsFollowTheMessagesPG(t *testing.T) {
	for _, tc := range []struct {
		name string
		fold func(step string) bool
	}{
		{"folded_after_each_step", func(string) bool { return true }},
		{"not_folded", func(string) bool { return false }},
		{"folded_halfway", func(step string) bool { return step == "single appends" || step == "rewind past the fork point" }},
	} {
		t.Run(tc.name, func(t *testing.T) { usageScenarioPG(t, tc.fold) })
	}
}

func usageScenarioPG(t *testing.T, fold func(step string) bool) {
	ctx := context.Background()
	url := mustDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	s := usageStore{mustOpenURL(t, url), conn}
	checkUsage := func(t *testing.T, s usageStore, tenant, step string) {
		t.Helper()
		checkUsage(t, s, tenant, step)
		checkFoldedPG(t, s, step)
		if fold(step) {
			if err := postgres.FoldUsageForTest(ctx, s.Store); err != nil {
				t.Fatalf("%s: fold: %v", step, err)
			}
			checkUsage(t, s, tenant, step+", folded")
			checkFoldedPG(t, s, step+", folded")
		}
	}
	agent := "support"
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "a", AgentID: &agent}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	msg := func(i int, mdl, agentID string) model.NewMessage {
		m := model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent(fmt.Sprintf("m%d", i)),
			Tokens: int64(10 + i), Cost: 0.001 * float64(i)}
		if mdl != "" {
			m.Model = &mdl
		}
		if agentID != "" {
			m.AgentID = &agentID
		}
		return m
	}
	for i := range 3 {
		if _, err := s.AppendMessages(ctx, "t", "a", model.AppendRequest{Messages: []model.NewMessage{msg(i, "gpt", "")}}); err != nil {
			t.Fatal(err)
		}
	}
	checkUsage(t, s, "t", "single appends")
	for i := 3; i < 6; i++ {
		if _, err := s.AppendMessages(ctx, "t", "a", model.AppendRequest{Messages: []model.NewMessage{msg(i, "gpt", "")}}); err != nil {
			t.Fatal(err)
		}
	}
	batch := model.AppendRequest{Batch: true, Messages: []model.NewMessage{msg(7, "claude", ""), msg(8, "", "helper"), msg(9, "gpt", "")}}
	if _, err := s.AppendMessages(ctx, "t", "b", batch); err != nil {
		t.Fatal(err)
	}
	// Concurrent appends share the writer's groups.
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := s.AppendMessages(ctx, "t", "b", model.AppendRequest{Messages: []model.NewMessage{msg(20+i, "gpt", "")}})
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	checkUsage(t, s, "t", "appends")

	at := int64(4)
	if _, err := s.ForkSession(ctx, "t", "a", model.ForkSession{ID: "f", AtSeq: &at}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "t", "fork")
	two := int64(2)
	if _, err := s.Rewind(ctx, "t", "a", model.Rewind{ToSeq: &two, Messages: []model.NewMessage{msg(30, "gpt", "")}}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "t", "rewind past the fork point")

	var buf bytes.Buffer
	if err := s.ExportSession(ctx, "t", "b", &buf); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportSession(ctx, "u", &buf, model.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "u", "import")
	checkUsage(t, s, "t", "import (another tenant)")

	if err := s.PurgeSession(ctx, "t", "b"); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "t", "purge")
	u, err := s.Usage(ctx, "t", model.UsageQuery{GroupBy: model.UsageByAgent, FromDay: 0, ToDay: math.MaxInt32, AgentID: "support"})
	if err != nil || len(u.Data) != 1 || *u.Data[0].Key != "support" || u.Total.Messages != u.Data[0].Messages {
		t.Errorf("usage of agent support = %+v, %v", u, err)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM usage_sessions WHERE tenant_id = 't' AND session_id = 'b'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("usage_sessions rows of the purged session: %d (%v), want 0", left, err)
	}
}

// checkFoldedPG holds the rollup tables themselves to the sums over the
// stored messages that are not in the tail: those with no message event of
// their own (copies, imports) and those whose event the folder has passed.
func checkFoldedPG(t *testing.T, s usageStore, step string) {
	t.Helper()
	const counted = `NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = m.tenant_id AND e.session_id = m.session_id
		AND e.seq = m.seq AND e.message_id = m.id AND e.type = 'message.appended'
		AND (e.pos IS NULL OR e.pos > (SELECT folded FROM usage_state WHERE one)))`
	for _, q := range []struct{ name, rollup, messages string }{
		{"usage_daily", `SELECT tenant_id || '/' || day || '/' || agent_id || '/' || model, messages, tokens, cost
			FROM usage_daily WHERE messages <> 0 OR tokens <> 0`,
			`SELECT m.tenant_id || '/' || (m.created_at / 86400000) || '/' || COALESCE(m.agent_id, s.agent_id, '') || '/' || COALESCE(m.model, ''),
				COUNT(*), SUM(m.tokens)::bigint, SUM(m.cost)
			FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id WHERE ` + counted + ` GROUP BY 1`},
		{"usage_sessions", `SELECT tenant_id || '/' || day || '/' || session_id, messages, tokens, cost
			FROM usage_sessions WHERE messages <> 0 OR tokens <> 0`,
			`SELECT m.tenant_id || '/' || (m.created_at / 86400000) || '/' || m.session_id, COUNT(*), SUM(m.tokens)::bigint, SUM(m.cost)
			FROM messages m WHERE ` + counted + ` GROUP BY 1`},
	} {
		got, want := sumsByPG(t, s, q.rollup), sumsByPG(t, s, q.messages)
		if len(got) != len(want) {
			t.Errorf("%s: %s holds %v; the counted messages say %v", step, q.name, got, want)
			continue
		}
		for k, w := range want {
			g := got[k]
			if g[0] != w[0] || g[1] != w[1] || math.Abs(g[2]-w[2]) > 1e-9 {
				t.Errorf("%s: %s[%s] = %v; the counted messages say %v", step, q.name, k, g, w)
			}
		}
	}
}

func sumsByPG(t *testing.T, s usageStore, query string) map[string][3]float64 {
	t.Helper()
	rows, err := s.conn.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][3]float64{}
	for rows.Next() {
		var (
			k     string
			n, tk int64
			c     float64
		)
		if err := rows.Scan(&k, &n, &tk, &c); err != nil {
			t.Fatal(err)
		}
		out[k] = [3]float64{float64(n), float64(tk), c}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The usage reads find their rows through indexes, as a purge's delete of a
// session's usage_sessions rows does: no sequential scan of a rollup table,
// of the messages or of the events.
func TestUsageStatementsUseIndexesPG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	_ = mustOpenURL(t, url)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The planner prefers a scan of a table it believes small; the question
	// here is whether an index can serve, as it will on a table that grew.
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	type stmt struct {
		name  string
		query string
		args  []any
	}
	list := []stmt{{"purge's delete", `DELETE FROM usage_sessions WHERE tenant_id = $1 AND session_id = $2`, []any{"t", "s"}}}
	for _, by := range []model.UsageGroupBy{model.UsageByDay, model.UsageByAgent, model.UsageByModel, model.UsageBySession} {
		for _, agent := range []string{"", "a"} {
			q, args := postgres.UsageQueryForTest("t", model.UsageQuery{GroupBy: by, FromDay: 1, ToDay: 2, AgentID: agent, Limit: 10})
			list = append(list, stmt{fmt.Sprintf("usage by %s, agent %q", by, agent), q, args})
		}
	}
	for _, st := range list {
		rows, err := conn.Query(ctx, `EXPLAIN `+st.query, st.args...)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
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
		for _, line := range plan {
			if strings.Contains(line, "Seq Scan") {
				t.Errorf("%s scans a table:\n%s", st.name, strings.Join(plan, "\n"))
				break
			}
		}
	}
}
