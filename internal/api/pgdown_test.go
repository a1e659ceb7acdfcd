package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// When PostgreSQL goes away, Logbook answers 503 storage_unavailable (never a
// 500, never a lost acknowledged write) and goes on by itself once it is back:
// the pool's broken connections are replaced, no restart of Logbook needed.
func TestPostgresGoesAwayAndComesBack(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.Start(t)
	if err := postgres.Migrate(ctx, cluster.URL("postgres"), "up", io.Discard); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: cluster.URL("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	loadSpec(t)
	ts := httptest.NewServer(api.New(api.Config{Store: st, Log: zerolog.Nop(), Spec: logbook.OpenAPI, AllowOpen: true}))
	defer ts.Close()
	c := &client{t: t, base: ts.URL, http: ts.Client(), store: st}

	mustCreateSession(t, c, map[string]any{"id": "s"})
	mustAppend(t, c, "s", userMsg("before"), "Idempotency-Key", "k1")
	if err := cluster.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path string }{
		{"POST", "/v1/sessions/s/messages"}, {"GET", "/v1/sessions/s"}, {"GET", "/v1/sessions/s/messages"},
	} {
		var body any
		if r.method == "POST" {
			body = userMsg("while down")
		}
		c.do(r.method, r.path, body, "Idempotency-Key", "k2").wantProblem(t, http.StatusServiceUnavailable, "storage_unavailable")
	}
	c.do("GET", "/readyz", nil).want(t, http.StatusServiceUnavailable, nil)

	if err := cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := c.do("GET", "/readyz", nil)
		if res.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz still %d after PostgreSQL came back", res.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The write refused while down was never stored: its retry stores it once.
	var m model.Message
	c.do("POST", "/v1/sessions/s/messages", userMsg("while down"), "Idempotency-Key", "k2").want(t, http.StatusCreated, &m)
	if m.Seq != 2 {
		t.Errorf("the retried append got seq %d, want 2", m.Seq)
	}
	if got := mustGetSession(t, c, "s"); got.LastSeq != 2 {
		t.Errorf("last_seq %d, want 2", got.LastSeq)
	}
}
