package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// manySessionsFixture is sessions of tenant t on a store with a pool of 4
// (at most 2 append writers) whose writers are paused, so that the appends
// queued meanwhile to all of them wait together until release.
type manySessionsFixture struct {
	t      *testing.T
	url    string
	st     *postgres.Store
	resume func()
	waits  []func() (model.AppendResult, error)
	ses    []string
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
	f.resume = postgres.PauseAppendsForTest(st)
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

// release lets the writers go and returns the outcomes, in queue order.
func (f *manySessionsFixture) release() ([]model.AppendResult, []error) {
	f.t.Helper()
	f.resume()
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
// transactions (a transaction per session before), each session's in the order queued and gap-free, with every
// session's counters as if one by one; a statement the database refuses
// (text with U+0000) fails only the append that carries it.
func TestAppendsOfManySessionsShareCommits(t *testing.T) {
	const sessions, rounds = 16, 3
	for _, tc := range []struct {
		name       string
		bad        string // the session whose second append is refused; "": none
		maxCommits int
	}{
		{"all stored", "", 2},
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

// A session whose row another transaction holds (a long rewind, another
// process's group) does not hold up the group it falls in: the other
// sessions' appends are stored while it is held, and its own, in order,
// once it is let go.
func TestAGroupDoesNotWaitForABusySession(t *testing.T) {
	const sessions, rounds, busy = 16, 2, "s05"
	f := mustManySessions(t, sessions)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	hold, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT 1 FROM sessions WHERE tenant_id = 't' AND id = $1 FOR UPDATE`, busy); err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		for _, s := range f.ses {
			f.queue(s, one(text(fmt.Sprintf("%s-%d", s, r))))
		}
	}
	f.resume()
	others := make(chan error, len(f.waits))
	for i, w := range f.waits {
		if f.ses[i%sessions] == busy {
			continue
		}
		go func() {
			res, err := w()
			if err == nil && res.Messages[0].Seq != int64(i/sessions+1) {
				err = fmt.Errorf("%s, round %d: seq %d", f.ses[i%sessions], i/sessions, res.Messages[0].Seq)
			}
			others <- err
		}()
	}
	deadline := time.After(30 * time.Second) // a liveness bound, not a speed: they wait for nothing
	for range (sessions - 1) * rounds {
		select {
		case err := <-others:
			if err != nil {
				t.Error(err)
			}
		case <-deadline:
			t.Fatalf("appends to other sessions still wait while %s is held", busy)
		}
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for i, w := range f.waits {
		if f.ses[i%sessions] != busy {
			continue
		}
		res, err := w()
		if err != nil || res.Messages[0].Seq != int64(i/sessions+1) {
			t.Errorf("%s, round %d: %v, %+v; want seq %d", busy, i/sessions, err, res, i/sessions+1)
		}
	}
}
