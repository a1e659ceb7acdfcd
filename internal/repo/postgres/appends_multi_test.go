package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// manySessionsFixture is sessions of tenant t whose rows another connection
// holds locked, with a pool of 4 (at most 2 append writers), so that the
// appends queued meanwhile to all of them gather into a few transactions
// once it lets go.
type manySessionsFixture struct {
	t     *testing.T
	url   string
	st    *postgres.Store
	hold  pgx.Tx
	waits []func() (model.AppendResult, error)
	ses   []string
}

func mustManySessions(t *testing.T, n int) *manySessionsFixture {
	t.Helper()
	ctx := context.Background()
	url := mustDatabase(t)
	st, err := postgres.Open(ctx, postgres.Config{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &manySessionsFixture{t: t, url: url, st: st}
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: id}); err != nil {
			t.Fatal(err)
		}
		f.ses = append(f.ses, id)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if f.hold, err = conn.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.hold.Exec(ctx, `SELECT 1 FROM sessions WHERE tenant_id = 't' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *manySessionsFixture) queue(session string, req model.AppendRequest) {
	f.t.Helper()
	wait, err := f.st.QueueAppend(context.Background(), "t", session, req, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.waits = append(f.waits, wait)
}

func (f *manySessionsFixture) release() ([]model.AppendResult, []error) {
	f.t.Helper()
	if err := f.hold.Rollback(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	res, errs := make([]model.AppendResult, len(f.waits)), make([]error, len(f.waits))
	for i, w := range f.waits {
		res[i], errs[i] = w()
	}
	return res, errs
}

// commits counts the transactions that wrote the tenant's messages.
func (f *manySessionsFixture) commits() int {
	f.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM messages WHERE tenant_id = 't'`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// Appends to many sessions that gather while the writers are busy share
// transactions, each session's in the order queued and gap-free, with every
// session's counters as if one by one; a statement the database refuses
// (text with U+0000) fails only the append that carries it.
func TestAppendsOfManySessionsShareCommits(t *testing.T) {
	const sessions, rounds = 16, 3
	for _, tc := range []struct {
		name       string
		bad        string // the session whose second append is refused; "": none
		maxCommits int
	}{
		{"all stored", "", 5},
		{"one refused", "s07", 0}, // the refused one's group is then written session by session
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustManySessions(t, sessions)
			for r := range rounds {
				for _, s := range f.ses {
					m := text(fmt.Sprintf("%s-%d", s, r))
					if s == tc.bad && r == 1 {
						m = text("nul \x00 here")
					}
					f.queue(s, one(m))
				}
			}
			res, errs := f.release()
			next := map[string]int64{}
			for i, err := range errs {
				s := f.ses[i%sessions]
				if s == tc.bad && i/sessions == 1 {
					if code(err) != "validation_failed" {
						t.Errorf("%s, round 1 (with NUL): %v; want validation_failed", s, err)
					}
					continue
				}
				next[s]++
				if err != nil || len(res[i].Messages) != 1 || res[i].Messages[0].Seq != next[s] {
					t.Errorf("%s, round %d: %v, %+v; want seq %d", s, i/sessions, err, res[i], next[s])
				}
			}
			for _, id := range f.ses {
				s, err := f.st.GetSession(context.Background(), "t", id)
				if err != nil {
					t.Fatal(err)
				}
				if s.LastSeq != next[id] || s.MessageCount != next[id] || s.TotalTokens != next[id] || s.Status != model.StatusActive {
					t.Errorf("session %s = %+v; want %d messages and tokens, active", id, s, next[id])
				}
			}
			if c := f.commits(); tc.maxCommits > 0 && c > tc.maxCommits {
				t.Errorf("%d appends to %d sessions took %d commits; want at most %d", sessions*rounds, sessions, c, tc.maxCommits)
			}
		})
	}
}
