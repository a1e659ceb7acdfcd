package expiry

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/metrics"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// backends opens a fresh store of each kind; PostgreSQL's half is skipped
// where PostgreSQL is not installed.
var backends = []struct {
	name string
	open func(t testing.TB) repo.Store
}{
	{"sqlite", func(t testing.TB) repo.Store {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "logbook.db"), Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}},
	{"postgres", func(t testing.TB) repo.Store {
		c := pgtest.Start(t)
		st, err := postgres.Open(t.Context(), postgres.Config{URL: c.URL("postgres"), Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}},
}

var (
	past   = model.Time(1500)
	future = model.Time(4102444800000) // 2100-01-01
)

// fill gives tenant a session that expired with messages, a session, a
// passage and an item that expire in 2100, one of each with no expiry, an
// expired passage and an expired item with a text waiting to be embedded.
func fill(t *testing.T, st repo.Store, tenant string) {
	t.Helper()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"gone", "later", "plain"} {
		_, err := st.CreateSession(ctx, tenant, model.CreateSession{ID: id})
		must(err)
		_, err = st.AppendMessages(ctx, tenant, id, model.AppendRequest{Messages: []model.NewMessage{
			{Role: model.RoleUser, Content: model.TextContent("a")}, {Role: model.RoleUser, Content: model.TextContent("b")}}})
		must(err)
	}
	for id, at := range map[string]model.Time{"gone": past, "later": future} {
		_, err := st.UpdateSession(ctx, tenant, id, model.UpdateSession{ExpiresAt: model.Optional[model.Time]{Set: true, Value: at}})
		must(err)
	}
	_, err := st.CreateAgent(ctx, tenant, model.CreateAgent{ID: "ag", Name: "ag"})
	must(err)
	for _, exp := range []*model.Time{&past, &future, nil} {
		_, err := st.CreatePassage(ctx, tenant, "ag", model.CreatePassage{Content: "note", ExpiresAt: exp})
		must(err)
	}
	for key, exp := range map[string]*model.Time{"gone": &past, "later": &future, "plain": nil} {
		_, err := st.WriteItems(ctx, tenant, []model.ItemWrite{{Ref: model.ItemRef{Namespace: []string{"mem"}, Key: key},
			Put: model.PutItem{Value: model.Object(`{"text":"a note"}`), Index: &model.ItemIndex{Paths: []string{"text"}},
				ExpiresAt: exp, ServerEmbeds: key == "gone"}}})
		must(err)
	}
}

// waiting counts what a purge of tenant's expired rows would erase now.
func waiting(t *testing.T, st repo.Store, tenant string) model.PurgeResult {
	t.Helper()
	res, err := st.PurgeSessions(t.Context(), tenant, model.PurgeRequest{Expired: true, DryRun: true}.WithCutoff(model.Now()))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// removed reads logbook_expired_removed_total{kind}.
func removed(t *testing.T, reg *metrics.Registry, kind string) float64 {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "logbook_expired_removed_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no logbook_expired_removed_total{kind=%q}", kind)
	return 0
}

// TestSweep: one sweep erases every tenant's expired sessions (with their
// messages) and passages, leaves the rest, logs and counts what it removed;
// a second finds nothing.
func TestSweep(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			for _, tenant := range []string{"a", "b"} {
				fill(t, st, tenant)
			}
			tenants, err := st.ExpiredTenants(t.Context(), model.Now())
			if err != nil || strings.Join(tenants, " ") != "a b" {
				t.Fatalf("expired tenants: %q, %v; want a b", tenants, err)
			}
			var log bytes.Buffer
			reg := metrics.New("test", zerolog.Nop())
			sw := New(st, zerolog.New(&log), reg)
			got, err := sw.Sweep(t.Context())
			if want := (model.PurgeResult{Sessions: 2, Messages: 4, Passages: 2, Items: 2}); err != nil || got != want {
				t.Fatalf("sweep: %+v, %v; want %+v", got, err, want)
			}
			for _, tenant := range []string{"a", "b"} {
				if w := waiting(t, st, tenant); w != (model.PurgeResult{DryRun: true}) {
					t.Errorf("tenant %s still has expired rows: %+v", tenant, w)
				}
				for _, id := range []string{"later", "plain"} {
					if s, err := st.GetSession(t.Context(), tenant, id); err != nil || s.MessageCount != 2 {
						t.Errorf("tenant %s, %s: %+v, %v; want it kept with its 2 messages", tenant, id, s, err)
					}
				}
				ps, err := st.ListPassages(t.Context(), tenant, "ag", repo.PageRequest{Limit: 10})
				if err != nil || len(ps.Data) != 2 {
					t.Errorf("tenant %s: %d passages left, %v; want 2", tenant, len(ps.Data), err)
				}
				items, err := st.SearchItems(t.Context(), tenant, "", model.ItemSearch{Limit: 10})
				if err != nil || len(items.Data) != 2 {
					t.Errorf("tenant %s: %d items left, %v; want 2", tenant, len(items.Data), err)
				}
			}
			// The erased item's text waits for the embedding worker no more.
			if jobs, err := st.ClaimEmbeddings(t.Context(), repo.EmbeddingClaim{Tenants: 8, PerTenant: 10, Lease: time.Minute}); err != nil || len(jobs) != 0 {
				t.Errorf("embedding jobs after the sweep: %+v, %v; want none", jobs, err)
			}
			if s, p, i := removed(t, reg, KindSession), removed(t, reg, KindPassage), removed(t, reg, KindItem); s != 2 || p != 2 || i != 2 {
				t.Errorf("counted %v sessions, %v passages, %v items; want 2 each", s, p, i)
			}
			if n := strings.Count(log.String(), `"message":"expired rows removed"`); n != 2 {
				t.Errorf("%d log lines of removed rows, want one per tenant:\n%s", n, log.String())
			}
			if got, err := sw.Sweep(t.Context()); err != nil || got != (model.PurgeResult{}) {
				t.Errorf("second sweep: %+v, %v; want nothing", got, err)
			}
			if tenants, err := st.ExpiredTenants(t.Context(), model.Now()); err != nil || len(tenants) != 0 {
				t.Errorf("expired tenants after: %q, %v", tenants, err)
			}
		})
	}
}

// TestRun: on a short interval the sweep finds what expires while it runs,
// never runs twice at once, and Run returns promptly once ctx ends.
func TestRun(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			soon := model.Now() + 200
			for _, tenant := range []string{"a", "b"} {
				if _, err := st.CreateSession(t.Context(), tenant, model.CreateSession{ID: "soon", ExpiresAt: &soon}); err != nil {
					t.Fatal(err)
				}
			}
			sw := New(st, zerolog.Nop(), nil)

			sw.running.Lock() // a sweep under way
			if _, err := sw.Sweep(t.Context()); err != ErrBusy {
				t.Errorf("sweep beside another: %v, want ErrBusy", err)
			}
			sw.running.Unlock()

			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { sw.Run(ctx, 20*time.Millisecond); close(done) }()
			deadline := time.Now().Add(10 * time.Second)
			for {
				tenants, err := st.ExpiredTenants(t.Context(), model.Now()+1)
				if err != nil {
					t.Fatal(err)
				}
				_, errA := st.GetSession(t.Context(), "a", "soon")
				if len(tenants) == 0 && model.IsNotFound(errA, "session") {
					break // expired, then swept
				}
				if time.Now().After(deadline) {
					t.Fatalf("not swept: tenants %q", tenants)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
		})
	}
}

// TestSweepKeys: the sweep deletes the Idempotency-Keys older than their
// time to live, which look-ups already ignore, and counts them; younger
// keys stay.
func TestSweepKeys(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			ctx := t.Context()
			for _, key := range []string{"k1", "k2"} {
				k := model.IdempotencyKey{Tenant: "a", Key: key}
				c := repo.NewIdempotencyClaim(k, "POST /v1/sessions", model.Now()-1000, func() []byte { return []byte(key) })
				if _, err := st.CreateSession(repo.WithIdempotencyClaim(ctx, c), "a", model.CreateSession{}); err != nil || !c.Claimed() {
					t.Fatalf("claim %s: %v", key, err)
				}
			}
			reg := metrics.New("test", zerolog.Nop())
			if _, err := New(st, zerolog.Nop(), reg).KeepKeys(time.Hour).Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if n := removed(t, reg, KindIdempotencyKey); n != 0 {
				t.Errorf("a sweep within the keys' time to live removed %v", n)
			}
			time.Sleep(5 * time.Millisecond)
			if _, err := New(st, zerolog.Nop(), reg).KeepKeys(time.Millisecond).Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if n := removed(t, reg, KindIdempotencyKey); n != 2 {
				t.Errorf("removed %v keys, want 2", n)
			}
			if _, found, err := st.IdempotentRequest(ctx, model.IdempotencyKey{Tenant: "a", Key: "k1"}, 0); found || err != nil {
				t.Errorf("a swept key is still there (%v)", err)
			}
		})
	}
}
