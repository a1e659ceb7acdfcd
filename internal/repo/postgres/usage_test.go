package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
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
// detaches when its parent rewinds, a rewind, an import, a purge.
func TestUsageRollupsFollowTheMessagesPG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	s := usageStore{mustOpenURL(t, url), conn}
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
	for i := range 6 {
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
}
