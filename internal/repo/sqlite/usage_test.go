package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// usageFromMessages is what the rollups must say: the sums over the stored
// messages, computed from them directly.
func usageFromMessages(t *testing.T, s *Store, tenant string, by model.UsageGroupBy) map[string][3]float64 {
	t.Helper()
	key := map[model.UsageGroupBy]string{
		model.UsageByDay:     "CAST(m.created_at / 86400000 AS TEXT)",
		model.UsageByAgent:   "COALESCE(m.agent_id, s.agent_id, '')",
		model.UsageByModel:   "COALESCE(m.model, '')",
		model.UsageBySession: "m.session_id",
	}[by]
	rows, err := s.rdb.Query(`SELECT `+key+`, COUNT(*), SUM(m.tokens), SUM(m.cost) FROM messages m
		JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id WHERE m.tenant_id = ? GROUP BY 1`, tenant)
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
func checkUsage(t *testing.T, s *Store, tenant, step string) {
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

// checkFolded holds the rollups themselves to what they must say: the sums
// over the stored messages the folder has passed (gid <= usage_state.folded),
// nothing more and nothing less. Both sides are read in one snapshot: the
// writer may fold between two statements.
func checkFolded(t *testing.T, s *Store, step string) {
	t.Helper()
	tx, err := s.rdb.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, q := range []struct{ name, rollup, messages string }{
		{"usage_daily", `SELECT tenant_id || '/' || day || '/' || agent_id || '/' || model, messages, tokens, cost
			FROM usage_daily WHERE messages <> 0 OR tokens <> 0`,
			`SELECT m.tenant_id || '/' || (m.created_at / 86400000) || '/' || COALESCE(m.agent_id, s.agent_id, '') || '/' || COALESCE(m.model, ''),
				COUNT(*), SUM(m.tokens), SUM(m.cost)
			FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
			WHERE m.gid <= (SELECT folded FROM usage_state) GROUP BY 1`},
		{"usage_sessions", `SELECT tenant_id || '/' || day || '/' || session_id, messages, tokens, cost
			FROM usage_sessions WHERE messages <> 0 OR tokens <> 0`,
			`SELECT tenant_id || '/' || (created_at / 86400000) || '/' || session_id, COUNT(*), SUM(tokens), SUM(cost)
			FROM messages WHERE gid <= (SELECT folded FROM usage_state) GROUP BY 1`},
	} {
		got, want := sumsBy(t, tx, q.rollup), sumsBy(t, tx, q.messages)
		if len(got) != len(want) {
			t.Errorf("%s: %s holds %v; the folded messages say %v", step, q.name, got, want)
			continue
		}
		for k, w := range want {
			g := got[k]
			if g[0] != w[0] || g[1] != w[1] || math.Abs(g[2]-w[2]) > 1e-9 {
				t.Errorf("%s: %s[%s] = %v; the folded messages say %v", step, q.name, k, g, w)
			}
		}
	}
}

func sumsBy(t *testing.T, tx *sql.Tx, query string) map[string][3]float64 {
	t.Helper()
	rows, err := tx.Query(query)
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

// foldAll runs the usage folder until it has passed every stored message.
func foldAll(t *testing.T, s *Store) {
	t.Helper()
	for {
		more, err := s.foldUsageOnce(context.Background())
		if err != nil {
			t.Fatalf("fold usage: %v", err)
		}
		if !more {
			return
		}
	}
}

// The rollups stay the sums over the stored messages through every write
// that stores or removes messages: appends (single, batch, grouped), a fork
// that detaches when its parent rewinds, a rewind, an import, a purge. Reads
// add what the folder has not reached, so they hold wherever it stands: the
// scenario runs with the folder passing everything after each step, never
// (within the test; its own goroutine may), and halfway through the appends,
// so that rewinds, copies and purges meet folded and unfolded messages alike.
func TestUsageRollupsFollowTheMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		fold func(step string) bool // fold after this step?
	}{
		{"folded_after_each_step", func(string) bool { return true }},
		{"not_folded", func(string) bool { return false }},
		{"folded_halfway", func(step string) bool { return step == "single appends" || step == "rewind past the fork point" }},
	} {
		t.Run(tc.name, func(t *testing.T) { usageScenario(t, tc.fold) })
	}
}

func usageScenario(t *testing.T, fold func(step string) bool) {
	s := mustOpen(t)
	ctx := context.Background()
	check := func(tenant, step string) {
		t.Helper()
		checkUsage(t, s, tenant, step)
		checkFolded(t, s, step)
		if fold(step) {
			foldAll(t, s)
			checkUsage(t, s, tenant, step+", folded")
			checkFolded(t, s, step+", folded")
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
	check("t", "single appends")
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
	check("t", "appends")

	at := int64(4)
	if _, err := s.ForkSession(ctx, "t", "a", model.ForkSession{ID: "f", AtSeq: &at}); err != nil {
		t.Fatal(err)
	}
	check("t", "fork")
	two := int64(2)
	if _, err := s.Rewind(ctx, "t", "a", model.Rewind{ToSeq: &two, Messages: []model.NewMessage{msg(30, "gpt", "")}}); err != nil {
		t.Fatal(err)
	}
	check("t", "rewind past the fork point")

	var buf bytes.Buffer
	if err := s.ExportSession(ctx, "t", "b", &buf); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportSession(ctx, "u", &buf, model.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	check("u", "import")
	check("t", "import (another tenant)")

	if err := s.PurgeSession(ctx, "t", "b"); err != nil {
		t.Fatal(err)
	}
	check("t", "purge")
	u, err := s.Usage(ctx, "t", model.UsageQuery{GroupBy: model.UsageByAgent, FromDay: 0, ToDay: math.MaxInt32, AgentID: "support"})
	if err != nil || len(u.Data) != 1 || *u.Data[0].Key != "support" || u.Total.Messages != u.Data[0].Messages {
		t.Errorf("usage of agent support = %+v, %v", u, err)
	}
	// A purge leaves nothing of the session in the rollups.
	var left int
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM usage_sessions WHERE tenant_id = 't' AND session_id = 'b'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("usage_sessions rows of the purged session: %d (%v), want 0", left, err)
	}
}

// The usage reads, the fold and a purge's delete find their rows through an
// index, never a scan of a rollup table or of the messages: by session (a
// purge), by tenant and days (every read, with and without an agent), by gid
// (the fold and the tail).
func TestUsageStatementsUseIndexes(t *testing.T) {
	s := mustOpen(t)
	type stmt struct {
		name  string
		query string
		args  []any
	}
	list := []stmt{
		{"purge's delete", `DELETE FROM usage_sessions WHERE tenant_id = ? AND session_id = ?`, []any{"t", "s"}},
		{"fold", usageStretchSQL, []any{0, 1}},
	}
	for _, by := range []model.UsageGroupBy{model.UsageByDay, model.UsageByAgent, model.UsageByModel, model.UsageBySession} {
		for _, agent := range []string{"", "a"} {
			q, args := usageQuery("t", model.UsageQuery{GroupBy: by, FromDay: 1, ToDay: 2, AgentID: agent})
			list = append(list, stmt{fmt.Sprintf("usage by %s, agent %q", by, agent), q, args})
		}
	}
	for _, st := range list {
		rows, err := s.rdb.Query(`EXPLAIN QUERY PLAN `+st.query, st.args...)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, d := range plan {
			f := strings.Fields(d)
			// x and (subquery-N) are the statements' own subqueries, not tables.
			if len(f) > 1 && f[0] == "SCAN" && f[1] != "x" && !strings.HasPrefix(f[1], "(subquery") {
				t.Errorf("%s: plan %q scans a table", st.name, plan)
			}
		}
	}
}

// The folder takes the appends' rows from the sums the writer keeps as it
// flushes them, and trusts those sums only when the stretch's rows on
// messages_by_gid are as many: a message stored by a path that did not
// invalidate them (here, a raw insert in a write of its own) is read back
// from the table instead, and the rollups stay exact.
func TestUsageFoldCatchesAnUnsummedMessage(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.AppendMessages(ctx, "t", "a", model.AppendRequest{Messages: []model.NewMessage{
			{Role: model.RoleUser, Content: model.TextContent("hi"), Tokens: int64(i + 1)}}}); err != nil {
			t.Fatal(err)
		}
	}
	foldAll(t, s)
	checkFolded(t, s, "appends folded from the sums")
	if _, err := s.AppendMessages(ctx, "t", "a", model.AppendRequest{Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.TextContent("summed"), Tokens: 7}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, tokens, cost,
			metadata, created_at, gid, cum_tokens, cum_cost) VALUES ('t', 'a', 100, 'msg_raw', 'user', 'raw', 1000, 0, '{}', ?, ?, 0, 0)`,
			int64(model.Now()), s.nextGID())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	foldAll(t, s)
	checkFolded(t, s, "a raw insert beside a summed append")
	checkUsage(t, s, "t", "a raw insert beside a summed append")
}
