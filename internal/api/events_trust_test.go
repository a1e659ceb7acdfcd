package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// end reads the stream until it ends, failing after timeout; it returns the
// events that came before the end.
func (f *feed) end(timeout time.Duration) []sseEvent {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	var got []sseEvent
	for {
		e, ok := f.next(time.Until(deadline))
		if !ok {
			return got
		}
		got = append(got, e)
	}
}

// opening reads the stream's opening block and returns its id: where the
// feed starts. Call it before next.
func (f *feed) opening() string {
	f.t.Helper()
	id := ""
	for {
		line, err := f.rd.ReadString('\n')
		if err != nil {
			f.t.Fatalf("the stream ended before its opening block: %v", err)
		}
		switch line = strings.TrimSuffix(line, "\n"); {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case line == "" && id != "":
			f.open = id
			return id
		}
	}
}

// A live feed ends, after its last whole event, soon after its reader may no
// longer read it, whatever took the right away; the client's reconnection
// (with Last-Event-ID) then gets the answer a new request gets.
func TestEventsEndWhenTheReaderMayNoLongerRead(t *testing.T) {
	soon := func() string { return time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano) }
	for _, tc := range []struct {
		name   string
		open   bool   // open mode: no key at all
		path   string // the stream
		act    func(t *testing.T, c, w, admin *client, key model.NewAPIKey)
		status int
		code   string
	}{
		{"key_revoked", false, "/v1/sessions/s/events", func(t *testing.T, c, w, admin *client, key model.NewAPIKey) {
			admin.do("DELETE", "/v1/admin/keys/"+key.ID, nil).want(t, http.StatusOK, nil)
		}, http.StatusUnauthorized, "unauthorized"},
		{"key_revoked_tenant_feed", false, "/v1/events", func(t *testing.T, c, w, admin *client, key model.NewAPIKey) {
			admin.do("DELETE", "/v1/admin/keys/"+key.ID, nil).want(t, http.StatusOK, nil)
		}, http.StatusUnauthorized, "unauthorized"},
		{"open_mode_ended", true, "/v1/sessions/s/events", func(t *testing.T, c, w, admin *client, key model.NewAPIKey) {
			mustKey(t, c, model.DefaultTenant, model.ScopeAdmin) // as the CLI makes one: seen within a second
		}, http.StatusUnauthorized, "unauthorized"},
		{"open_mode_ended_tenant_feed", true, "/v1/events", func(t *testing.T, c, w, admin *client, key model.NewAPIKey) {
			mustKey(t, c, model.DefaultTenant, model.ScopeAdmin)
		}, http.StatusUnauthorized, "unauthorized"},
		{"session_purged", false, "/v1/sessions/s/events", func(t *testing.T, c, w, admin *client, key model.NewAPIKey) {
			if err := c.store.PurgeSession(context.Background(), "t", "s"); err != nil {
				t.Fatal(err)
			}
		}, http.StatusNotFound, "not_found"},
		{"session_closed_then_expired", false, "/v1/sessions/s/events", func(t *testing.T, c, w, admin *client, key model.NewAPIKey) {
			w.do("DELETE", "/v1/sessions/s", nil).want(t, http.StatusOK, nil)
			w.do("PATCH", "/v1/sessions/s", map[string]any{"expires_at": soon()}).want(t, http.StatusOK, nil)
		}, http.StatusNotFound, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []testServerOption{withEventsRecheck(100 * time.Millisecond)}
			if !tc.open {
				opts = append(opts, withoutOpenMode())
			}
			c := newClient(t, opts...)
			tenant, w, admin, r := model.DefaultTenant, c, c, c
			var key model.NewAPIKey
			if !tc.open {
				tenant = "t"
				w, admin = adminClients(t, c)
				key = mustKey(t, c, tenant, model.ScopeRead)
				r = c.as(key.Key)
			}
			mustCreateSession(t, w, map[string]any{"id": "s"})
			f := openFeed(t, r, tc.path)
			appendText(t, w, "s", "while allowed")
			if e := f.must("message.appended"); !strings.Contains(e.Data, "while allowed") {
				t.Fatalf("event = %s", e.Data)
			}
			tc.act(t, c, w, admin, key)
			began := time.Now()
			f.end(10 * time.Second)
			t.Logf("the stream ended %v after the change", time.Since(began).Round(time.Millisecond))
			r.do("GET", tc.path, nil, "Last-Event-ID", f.open).wantProblem(t, tc.status, tc.code)
		})
	}
}

// A stream belongs to the session it opened on, not to its id: once that
// session is purged, a new session of the same id (another user's, with keys
// bound to users) never shows on it. The re-check interval is an hour here,
// so only the check of each batch, before it is written, can stop it.
func TestEventsStreamBelongsToItsSession(t *testing.T) {
	for _, tc := range []struct {
		name      string
		recreator func(ann, bob *client) *client
	}{
		{"another_user_recreates_the_id", func(ann, bob *client) *client { return bob }},
		{"the_same_key_recreates_the_id", func(ann, bob *client) *client { return ann }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, withoutOpenMode(), withEventsRecheck(time.Hour))
			_, admin := adminClients(t, c)
			userKey := func(user string) *client {
				var k model.NewAPIKey
				admin.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "user_id": user}).want(t, http.StatusCreated, &k)
				return c.as(k.Key)
			}
			ann, bob := userKey("ann"), userKey("bob")
			mustCreateSession(t, ann, map[string]any{"id": "x"})
			appendText(t, ann, "x", "ann's")
			f := openFeed(t, ann, "/v1/sessions/x/events?after_seq=0")
			f.must("session.created")
			f.must("message.appended")

			if err := c.store.PurgeSession(context.Background(), "t", "x"); err != nil {
				t.Fatal(err)
			}
			other := tc.recreator(ann, bob)
			mustCreateSession(t, other, map[string]any{"id": "x"})
			appendText(t, other, "x", "the new session's")
			other.do("PUT", "/v1/sessions/x/checkpoint", map[string]any{"iteration": 1, "state": map[string]any{}}).want(t, http.StatusCreated, nil)
			for _, e := range f.end(10 * time.Second) {
				t.Errorf("the old session's stream got %s: %s", e.Type, e.Data)
			}
		})
	}
}

// A batch read from the store stops once its data passes the byte bound
// (with at least one event, however large): a reader holds no more than
// that, whatever its backlog.
func TestEventsReadsAreBoundedInBytes(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "big"})
	const budget = 256 << 10
	sizes := []int{100 << 10, 100 << 10, 100 << 10, 100 << 10, 600 << 10, 10, 10, 100 << 10}
	for i, n := range sizes {
		mustAppend(t, c, "big", map[string]any{"role": "user", "content": strings.Repeat(string(rune('a'+i)), n)})
	}
	// Reading the head makes every committed event readable (on PostgreSQL,
	// numbers them), as a stream's opening does.
	if _, err := c.store.EventHead(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, types := range [][]model.EventType{nil, {model.EventMessageAppended}} {
		q := model.EventQuery{SessionID: "big", Types: types, Limit: 500, MaxBytes: budget}
		var seqs []int64
		for reads := 0; ; reads++ {
			if reads > 20 {
				t.Fatalf("no end after %d reads", reads)
			}
			b, err := c.store.ListEvents(context.Background(), model.DefaultTenant, q)
			if err != nil {
				t.Fatal(err)
			}
			size := 0
			for i, e := range b.Events {
				if i > 0 && size >= budget {
					t.Errorf("a batch goes on after its data (%d bytes) passed the bound %d", size, budget)
				}
				size += len(e.Data)
				if e.Type == model.EventMessageAppended {
					seqs = append(seqs, e.Seq)
				}
			}
			if b.Through < q.After || (len(b.Events) == 0 && b.More && b.Through == q.After) {
				t.Fatalf("read after %d: through %d, %d events, more %v: no progress", q.After, b.Through, len(b.Events), b.More)
			}
			q.After = b.Through
			if !b.More {
				break
			}
		}
		if len(seqs) != len(sizes) {
			t.Fatalf("types %v: read seqs %v; want %d messages", types, seqs, len(sizes))
		}
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("types %v: read seqs %v", types, seqs)
			}
		}
	}
}

// A reader that does not read is cut once a write to it blocks past the
// write timeout (the server holds its one batch until then, no more), and
// resumes from its last whole event with Last-Event-ID, missing nothing.
func TestEventsCutAReaderThatDoesNotRead(t *testing.T) {
	c := newClient(t, withEventsWriteTimeout(300*time.Millisecond))
	mustCreateSession(t, c, map[string]any{"id": "big"})
	const n = 24 // of 512 KiB: more than the sockets' buffers hold
	for i := range n {
		mustAppend(t, c, "big", map[string]any{"role": "user", "content": strings.Repeat(string(rune('a'+i)), 512<<10)})
	}
	f := openFeed(t, c, "/v1/sessions/big/events?after_seq=0&type=message.appended")
	time.Sleep(2 * time.Second) // stalled, past the timeout
	got := f.end(30 * time.Second)
	if len(got) >= n {
		t.Fatalf("the stalled reader got all %d events: it was not cut", len(got))
	}
	last := f.open
	if len(got) > 0 {
		last = got[len(got)-1].ID
	}
	g := openFeed(t, c, "/v1/sessions/big/events?type=message.appended", "Last-Event-ID", last)
	for i := len(got); i < n; i++ {
		e := g.must("message.appended")
		if !strings.Contains(e.Data, fmt.Sprintf(`"seq":%d,`, i+1)) {
			t.Fatalf("after the cut, event %d is %.80s; want seq %d", i, e.Data, i+1)
		}
	}
	t.Logf("cut after %d of %d events; resumed with the rest", len(got), n)
}

// A new session of an id sees nothing of the purged one that had it, even
// from an id of its tenant's feed that comes before the old session's
// events, while those events are still in the server's memory: a session's
// stream starts no earlier than the session's creation.
func TestEventsNewSessionOfAnIDSeesNoneOfTheOld(t *testing.T) {
	c := newClient(t, withoutOpenMode(), withEventsRecheck(time.Hour))
	_, admin := adminClients(t, c)
	userKey := func(user string) *client {
		var k model.NewAPIKey
		admin.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "user_id": user}).want(t, http.StatusCreated, &k)
		return c.as(k.Key)
	}
	ann, bob := userKey("ann"), userKey("bob")
	watch := openFeed(t, admin, "/v1/events") // the server follows the log in memory from here
	mustCreateSession(t, bob, map[string]any{"id": "bob-own"})
	watch.must("session.created")
	before := openFeed(t, bob, "/v1/sessions/bob-own/events").opening() // an id of the tenant's feed, before what follows

	mustCreateSession(t, ann, map[string]any{"id": "x"})
	appendText(t, ann, "x", "ann's secret")
	watch.must("session.created")
	watch.must("message.appended") // in memory now
	if err := c.store.PurgeSession(context.Background(), "t", "x"); err != nil {
		t.Fatal(err)
	}
	mustCreateSession(t, bob, map[string]any{"id": "x"})
	appendText(t, bob, "x", "bob's")
	for _, path := range []string{"/v1/sessions/x/events?after_seq=0", "/v1/sessions/x/events"} {
		var headers []string
		if !strings.Contains(path, "after_seq") {
			headers = []string{"Last-Event-ID", before}
		}
		f := openFeed(t, bob, path, headers...)
		created := f.must("session.created")
		msg := f.must("message.appended")
		for _, e := range []sseEvent{created, msg} {
			if strings.Contains(e.Data, "ann") {
				t.Errorf("%s: bob's stream got ann's %s: %s", path, e.Type, e.Data)
			}
		}
	}
}
