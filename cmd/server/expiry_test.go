package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

func TestExpirySweepFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want time.Duration
		err  string
	}{
		{name: "default", want: time.Minute},
		{name: "variable", env: []string{"LOGBOOK_EXPIRY_SWEEP", "30s"}, want: 30 * time.Second},
		{name: "zero_turns_it_off", env: []string{"LOGBOOK_EXPIRY_SWEEP", "0"}, want: 0},
		{name: "flag_wins", env: []string{"LOGBOOK_EXPIRY_SWEEP", "30s"}, args: []string{"--expiry-sweep", "1h"}, want: time.Hour},
		{name: "negative", args: []string{"--expiry-sweep", "-1s"}, err: "expiry-sweep"},
		{name: "not_a_duration", env: []string{"LOGBOOK_EXPIRY_SWEEP", "often"}, err: "expiry-sweep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseConfig("logbook", tc.args, envOf(tc.env...), io.Discard)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case cfg.ExpirySweep != tc.want:
				t.Errorf("ExpirySweep = %v, want %v", cfg.ExpirySweep, tc.want)
			}
		})
	}
}

// The server sweeps on its own: with --expiry-sweep 50ms, two tenants'
// expired sessions and passages go while the server runs, and their live ones
// stay; with 0, nothing goes. On SQLite and on PostgreSQL.
func TestExpirySweepInServer(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "logbook.db") },
		"postgres": func(t *testing.T) string { return pgtest.Start(t).URL("postgres") },
	}
	for name, newDB := range backends {
		for _, every := range []string{"50ms", "0"} {
			t.Run(name+"/every_"+every, func(t *testing.T) {
				db := newDB(t)
				ctx := t.Context()
				st, err := openStore(ctx, config{DB: db, Sync: "full", Migrate: true}, false)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = st.Close() })
				for _, tenant := range []string{"a", "b"} {
					fillExpiring(t, st, tenant)
				}
				_, stop := runInProcess(t, []string{"--addr", "127.0.0.1:0", "--expiry-sweep", every},
					envOf("LOGBOOK_DB", db, "LOGBOOK_LOG_LEVEL", "warn"))
				// The rows expire 300 ms after they were made; then wait for them
				// to go (or, when off, long enough for several sweeps).
				deadline := time.Now().Add(10 * time.Second)
				if every == "0" {
					deadline = time.Now().Add(600 * time.Millisecond)
				}
				for time.Now().Before(deadline) {
					if tenants, err := st.ExpiredTenants(ctx, model.Now()+1e6); err != nil {
						t.Fatal(err)
					} else if len(tenants) == 0 {
						break
					}
					time.Sleep(25 * time.Millisecond)
				}
				if err := stop(); err != nil {
					t.Fatalf("run: %v", err)
				}
				for _, tenant := range []string{"a", "b"} {
					left, err := st.PurgeSessions(ctx, tenant, model.PurgeRequest{Expired: true, DryRun: true}.WithCutoff(model.Now()))
					if err != nil {
						t.Fatal(err)
					}
					want := model.PurgeResult{DryRun: true, Sessions: 1, Messages: 1, Passages: 1}
					if every != "0" {
						want = model.PurgeResult{DryRun: true}
					}
					if left != want {
						t.Errorf("tenant %s: waiting %+v, want %+v", tenant, left, want)
					}
					if s, err := st.GetSession(ctx, tenant, "live"); err != nil || s.MessageCount != 1 {
						t.Errorf("tenant %s: live session %+v, %v", tenant, s, err)
					}
					ps, err := st.ListPassages(ctx, tenant, "ag", repo.PageRequest{Limit: 10})
					if err != nil || len(ps.Data) != 1 {
						t.Errorf("tenant %s: %d live passages, %v; want 1", tenant, len(ps.Data), err)
					}
				}
			})
		}
	}
}

// fillExpiring gives tenant a session and a passage that expire in 300 ms
// and a live one of each.
func fillExpiring(t *testing.T, st repo.Store, tenant string) {
	t.Helper()
	ctx := context.Background()
	soon := model.Now() + 300
	for _, id := range []string{"soon", "live"} {
		_, err := st.CreateSession(ctx, tenant, model.CreateSession{ID: id})
		if err == nil {
			_, err = st.AppendMessages(ctx, tenant, id, model.AppendRequest{Messages: []model.NewMessage{
				{Role: model.RoleUser, Content: model.TextContent("hi")}}})
		}
		if err == nil && id == "soon" { // after the append, which it would refuse once expired
			_, err = st.UpdateSession(ctx, tenant, id, model.UpdateSession{ExpiresAt: model.Optional[model.Time]{Set: true, Value: soon}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateAgent(ctx, tenant, model.CreateAgent{ID: "ag", Name: "ag"}); err != nil {
		t.Fatal(err)
	}
	for _, exp := range []*model.Time{&soon, nil} {
		if _, err := st.CreatePassage(ctx, tenant, "ag", model.CreatePassage{Content: "note", ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}
}
