package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/rs/zerolog"

	"github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	lbfeed "github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/model"
)

// sseEvent is one event as a client parses text/event-stream.
type sseEvent struct {
	ID   string
	Type string
	Data string
}

// feed is an open live feed, read as an EventSource would.
type feed struct {
	t    testing.TB
	req  *http.Request
	res  *http.Response
	raw  bytes.Buffer // everything read, for the spec check at close
	rd   *bufio.Reader
	cmts int    // comment lines seen (heartbeats)
	open string // the opening block's id: where the feed starts
	once sync.Once
}

// openFeed opens a live feed; headers come in name, value pairs.
func openFeed(t testing.TB, c *client, path string, headers ...string) *feed {
	t.Helper()
	req, err := http.NewRequest("GET", c.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	f := &feed{t: t, req: req, res: res}
	f.rd = bufio.NewReader(io.TeeReader(res.Body, &f.raw))
	if res.StatusCode != http.StatusOK {
		f.close()
		t.Fatalf("GET %s = %d: %s", path, res.StatusCode, f.raw.Bytes())
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	t.Cleanup(f.close)
	return f
}

// close ends the stream and checks what was read against openapi.yaml.
func (f *feed) close() {
	f.once.Do(func() {
		f.res.Body.Close()
		_, _ = io.Copy(io.Discard, f.rd)
		checkResponse(f.t, f.req, &response{Status: f.res.StatusCode, Header: f.res.Header, Body: f.raw.Bytes()})
	})
}

// next reads the next event, failing the test after timeout (and on the end
// of the stream unless eofOK, when it returns false).
func (f *feed) next(timeout time.Duration) (sseEvent, bool) {
	f.t.Helper()
	type result struct {
		e   sseEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		var e sseEvent
		var data []string
		seen := false
		for {
			line, err := f.rd.ReadString('\n')
			if err != nil {
				done <- result{err: err}
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "" && seen && e.Type == "" && len(data) == 0:
				seen = false // an id alone (the opening one) is no event
				if f.open == "" {
					f.open = e.ID
				}
			case line == "":
				if seen {
					e.Data = strings.Join(data, "\n")
					done <- result{e: e}
					return
				}
			case strings.HasPrefix(line, ":"):
				f.cmts++
			case strings.HasPrefix(line, "id: "):
				e.ID, seen = line[4:], true
			case strings.HasPrefix(line, "event: "):
				e.Type, seen = line[7:], true
			case strings.HasPrefix(line, "data: "):
				data, seen = append(data, line[6:]), true
			case strings.HasPrefix(line, "retry: "):
			default:
				done <- result{err: fmt.Errorf("unexpected line %q", line)}
				return
			}
		}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return sseEvent{}, false
		}
		return r.e, true
	case <-time.After(timeout):
		f.t.Fatalf("no event within %v", timeout)
		return sseEvent{}, false
	}
}

// must reads the next event and fails unless it has type typ.
func (f *feed) must(typ string) sseEvent {
	f.t.Helper()
	e, ok := f.next(10 * time.Second)
	if !ok {
		f.t.Fatalf("stream ended; want a %s event", typ)
	}
	if e.Type != typ {
		f.t.Fatalf("event %s is %s (%s); want %s", e.ID, e.Type, e.Data, typ)
	}
	checkEventData(f.t, e)
	return e
}

// checkEventData validates an event's data against the schema openapi.yaml
// names for its type.
func checkEventData(t testing.TB, e sseEvent) {
	t.Helper()
	doc, _ := loadSpec(t)
	var v any
	if err := json.Unmarshal([]byte(e.Data), &v); err != nil {
		t.Fatalf("event %s data is not JSON: %v\n%s", e.ID, err, e.Data)
	}
	schema := map[string]string{"message.appended": "Message", "session.created": "Session", "session.updated": "Session",
		"session.rewound": "RewindEvent", "compaction.created": "Compaction", "checkpoint.created": "CheckpointEvent"}[e.Type]
	if schema == "" {
		t.Fatalf("event %s has unknown type %q", e.ID, e.Type)
	}
	if err := doc.Components.Schemas[schema].Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		t.Errorf("event %s (%s) data does not match %s: %v\n%s", e.ID, e.Type, schema, err, e.Data)
	}
}

func appendText(t testing.TB, c *client, session, text string) model.Message {
	t.Helper()
	var m model.Message
	c.do("POST", "/v1/sessions/"+session+"/messages", map[string]any{"role": "user", "content": text}).want(t, 201, &m)
	return m
}

// A session's feed carries every kind of change, in commit order, each
// event's data being the object the API shows.
func TestSessionEventsCarryEveryChange(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"id": "s1"})
	f := openFeed(t, c, "/v1/sessions/"+s.ID+"/events?after_seq=0")
	created := f.must("session.created")

	m1 := appendText(t, c, s.ID, "one")
	appendText(t, c, s.ID, "two")
	// Read before the rewind below takes message two: a message's event is
	// left out of what is read after its message is gone (as on SQLite,
	// whose message events are the messages), and a reader may be that late.
	var got model.Message
	e := f.must("message.appended")
	if err := json.Unmarshal([]byte(e.Data), &got); err != nil || got.ID != m1.ID || got.Seq != 1 || got.Content.Text != "one" {
		t.Errorf("first message event = %s; want message %s", e.Data, m1.ID)
	}
	two := f.must("message.appended")

	c.do("PUT", "/v1/sessions/"+s.ID+"/checkpoint", map[string]any{"iteration": 1, "state": map[string]any{"k": 1}}).want(t, 201, nil)
	c.do("POST", "/v1/sessions/"+s.ID+"/compactions", map[string]any{"through_seq": 1, "summary": "s"}).want(t, 201, nil)
	c.do("POST", "/v1/sessions/"+s.ID+"/rewind", map[string]any{"to_seq": 1,
		"messages": []any{map[string]any{"role": "user", "content": "again"}}}).want(t, 200, nil)
	c.do("PATCH", "/v1/sessions/"+s.ID, map[string]any{"status": "completed"}).want(t, 200, nil)

	f.must("checkpoint.created")
	f.must("compaction.created")
	rw := f.must("session.rewound")
	var r model.RewindEvent
	if err := json.Unmarshal([]byte(rw.Data), &r); err != nil || r.ToSeq != 1 || r.RemovedMessages != 1 {
		t.Errorf("rewind event = %s", rw.Data)
	}
	again := f.must("message.appended")
	if !strings.Contains(again.Data, `"again"`) || !strings.Contains(again.Data, `"seq":2`) {
		t.Errorf("replacement event = %s", again.Data)
	}
	up := f.must("session.updated")
	if !strings.Contains(up.Data, `"status":"completed"`) {
		t.Errorf("update event = %s", up.Data)
	}
	mustBeDistinctIDs(t, created.ID, e.ID, two.ID, rw.ID, again.ID, up.ID)

	// Read again from after the first message, after the rewind: the removed
	// message is simply absent (the session.rewound event tells), and every
	// other event comes again with its id.
	g := openFeed(t, c, "/v1/sessions/"+s.ID+"/events", "Last-Event-ID", e.ID)
	for _, want := range []sseEvent{{Type: "checkpoint.created"}, {Type: "compaction.created"}, rw, again, up} {
		if got := g.must(want.Type); want.ID != "" && got.ID != want.ID {
			t.Errorf("replayed %s has id %s; the live feed gave %s", want.Type, got.ID, want.ID)
		}
	}
}

// feedStart is the id of the log's very start in tenant's feed, which no
// event carries (a session's feed gives it as its opening id with
// after_seq=0): the tenant's feed after it reads the whole log.
func feedStart(t testing.TB, c *client, tenant string) string {
	t.Helper()
	ids, err := lbfeed.NewIDs(c.store.FeedSecret())
	if err != nil {
		t.Fatal(err)
	}
	return ids.For(tenant).Seal(0)
}

// mustBeDistinctIDs fails unless every id is there and none repeats: ids are
// opaque, compared for equality only.
func mustBeDistinctIDs(t testing.TB, ids ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" || seen[id] {
			t.Errorf("event ids %v: want each there, once", ids)
			return
		}
		seen[id] = true
	}
}

// Last-Event-ID, ?after= and ?after_seq= resume exactly: nothing missed,
// nothing twice.
func TestSessionEventsResumeExactly(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"id": "r"})
	for i := 1; i <= 30; i++ {
		appendText(t, c, s.ID, fmt.Sprintf("m%d", i))
	}
	f := openFeed(t, c, "/v1/sessions/r/events?after_seq=0&type=message.appended")
	var ids []string
	for i := 1; i <= 12; i++ {
		e := f.must("message.appended")
		if !strings.Contains(e.Data, fmt.Sprintf(`"seq":%d,`, i)) {
			t.Fatalf("event %d = %s; want seq %d", i, e.Data, i)
		}
		ids = append(ids, e.ID)
	}
	f.close() // the client goes away mid-feed

	for _, resume := range []struct {
		name    string
		path    string
		headers []string
	}{
		{"Last-Event-ID", "/v1/sessions/r/events?type=message.appended", []string{"Last-Event-ID", ids[11]}},
		{"after", "/v1/sessions/r/events?type=message.appended&after=" + url.QueryEscape(ids[11]), nil},
		{"after_seq", "/v1/sessions/r/events?type=message.appended&after_seq=12", nil},
	} {
		t.Run(resume.name, func(t *testing.T) {
			g := openFeed(t, c, resume.path, resume.headers...)
			for i := 13; i <= 30; i++ {
				e := g.must("message.appended")
				if !strings.Contains(e.Data, fmt.Sprintf(`"seq":%d,`, i)) {
					t.Fatalf("resumed event = %s; want seq %d", e.Data, i)
				}
			}
			appendText(t, c, s.ID, "live")
			if e := g.must("message.appended"); !strings.Contains(e.Data, `"live"`) {
				t.Fatalf("live event = %s", e.Data)
			}
			g.close()
		})
	}
}

// 100 readers of one session while 16 writers append: every reader sees
// every message once, in seq order; one reader's connection is cut midway
// and it resumes from its last id, missing nothing.
func TestManyReadersWhileManyWritersAppend(t *testing.T) {
	const readers, writers, each = 100, 16, 10
	c := newClient(t, withEventsMaxStreams(readers+1)) // reader 0 reopens before its first stream is reaped
	s := mustCreateSession(t, c, map[string]any{"id": "hot"})
	feeds := make([]*feed, readers)
	for i := range feeds {
		feeds[i] = openFeed(t, c, "/v1/sessions/hot/events?type=message.appended")
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				body := map[string]any{"role": "user", "content": fmt.Sprintf("w%d-%d", w, i), "idempotency_key": fmt.Sprintf("w%d-%d", w, i)}
				res := c.do("POST", "/v1/sessions/"+s.ID+"/messages", body)
				if res.Status != 201 {
					t.Errorf("append: %d %s", res.Status, res.Body)
					return
				}
			}
		})
	}
	const total = writers * each
	errs := make(chan error, readers)
	var rg sync.WaitGroup
	for i, f := range feeds {
		rg.Go(func() {
			seq, last, seen := int64(0), "", map[string]bool{}
			for seq < total {
				if i == 0 && seq == total/2 { // cut this reader's connection, then resume
					f.res.Body.Close()
					f = openFeed(t, c, "/v1/sessions/hot/events?type=message.appended", "Last-Event-ID", last)
				}
				e, ok := f.next(30 * time.Second)
				if !ok {
					errs <- fmt.Errorf("reader %d: stream ended after seq %d", i, seq)
					return
				}
				var m struct{ Seq int64 }
				if err := json.Unmarshal([]byte(e.Data), &m); err != nil || m.Seq != seq+1 || seen[e.ID] {
					errs <- fmt.Errorf("reader %d: event %s (seq %d) after seq %d, id %s", i, e.ID, m.Seq, seq, last)
					return
				}
				seq, last, seen[e.ID] = m.Seq, e.ID, true
			}
		})
	}
	wg.Wait()
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The tenant feed shows the caller's tenant only, filtered by session and
// type as asked.
func TestTenantEventsFilterAndIsolate(t *testing.T) {
	c := newClient(t)
	a, b := c.as(mustKey(t, c, "tenant-a", model.ScopeWrite).Key), c.as(mustKey(t, c, "tenant-b", model.ScopeWrite).Key)
	all := openFeed(t, a, "/v1/events")
	only := openFeed(t, a, "/v1/events?session_id=s2&type=message.appended")
	mustCreateSession(t, a, map[string]any{"id": "s1"})
	mustCreateSession(t, a, map[string]any{"id": "s2"})
	mustCreateSession(t, b, map[string]any{"id": "s2"}) // another tenant's, same id
	appendText(t, b, "s2", "not yours")
	appendText(t, a, "s1", "in s1")
	appendText(t, a, "s2", "in s2")

	for _, want := range []string{"session.created", "session.created", "message.appended", "message.appended"} {
		e := all.must(want)
		if strings.Contains(e.Data, "not yours") {
			t.Fatalf("tenant a saw tenant b's event: %s", e.Data)
		}
	}
	if e := only.must("message.appended"); !strings.Contains(e.Data, `"in s2"`) {
		t.Fatalf("filtered feed = %s; want s2's message", e.Data)
	}
}

// Bad filters are 400 invalid_query naming the parameter; a resume position
// that is no id of the caller's feed (malformed, numeric, another tenant's,
// past the newest event) is 400 invalid_event_id naming the header or
// parameter; a missing session is 404.
func TestEventsRefuseBadInput(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"id": "s"})
	appendText(t, c, s.ID, "x")
	mine := openFeed(t, c, "/v1/sessions/s/events?after_seq=0").must("session.created").ID
	other := c.as(mustKey(t, c, "other-tenant", model.ScopeRead).Key)
	ids, err := lbfeed.NewIDs(c.store.FeedSecret())
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.store.EventHead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	future := ids.For(model.DefaultTenant).Seal(head + 1000)
	for _, tc := range []struct {
		c            *client
		path, header string
		status       int
		code, field  string
	}{
		{c, "/v1/sessions/s/events?type=message.deleted", "", 400, "invalid_query", "type"},
		{c, "/v1/events?after=-1", "", 400, "invalid_event_id", "after"},
		{c, "/v1/events?after=1", "", 400, "invalid_event_id", "after"},
		{c, "/v1/events?bogus=1", "", 400, "invalid_query", "bogus"},
		{c, "/v1/sessions/s/events", "abc", 400, "invalid_event_id", "Last-Event-ID"},
		{c, "/v1/sessions/s/events", "12", 400, "invalid_event_id", "Last-Event-ID"},
		{c, "/v1/sessions/s/events", future, 400, "invalid_event_id", "Last-Event-ID"},
		{c, "/v1/events?after=" + url.QueryEscape(future), "", 400, "invalid_event_id", "after"},
		{other, "/v1/events?after=" + url.QueryEscape(mine), "", 400, "invalid_event_id", "after"},
		{other, "/v1/events", mine, 400, "invalid_event_id", "Last-Event-ID"},
		{c, "/v1/sessions/s/events?after_seq=2", "", 400, "invalid_query", "after_seq"},
		{c, "/v1/sessions/nope/events", "", 404, "not_found", ""},
	} {
		c := tc.c
		var res *response
		if tc.header != "" {
			res = c.do("GET", tc.path, nil, "Last-Event-ID", tc.header)
		} else {
			res = c.do("GET", tc.path, nil)
		}
		p := res.wantProblem(t, tc.status, tc.code)
		if tc.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tc.field) {
			t.Errorf("%s: errors %+v; want field %s", tc.path, p.Errors, tc.field)
		}
	}
}

// after_seq names a message; a message the session did not append itself (a
// fork's inherited one, an imported one) starts the feed at the session's
// creation, the same on both backends.
func TestEventsAfterSeqOfMessagesNotAppendedHere(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "p"})
	appendText(t, c, "p", "one")
	appendText(t, c, "p", "two")
	c.do("POST", "/v1/sessions/p/fork", map[string]any{"id": "f"}).want(t, 201, nil)
	appendText(t, c, "f", "three")
	export := c.do("GET", "/v1/sessions/f/export", nil).want(t, 200, nil).Body
	c.do("POST", "/v1/sessions/import?as_new=true", string(export), "Content-Type", "application/x-ndjson").want(t, 201, nil)
	var imported model.Page[model.Session]
	c.do("GET", "/v1/sessions?limit=1", nil).want(t, 200, &imported)
	im := imported.Data[0].ID

	for _, tc := range []struct {
		session string
		seq     int
		want    []string
	}{
		{"f", 1, []string{"session.created", "message.appended"}},
		{"f", 2, []string{"session.created", "message.appended"}},
		{"f", 3, nil},
		{im, 1, []string{"session.created"}},
		{im, 3, []string{"session.created"}},
	} {
		f := openFeed(t, c, fmt.Sprintf("/v1/sessions/%s/events?after_seq=%d", tc.session, tc.seq))
		for _, typ := range tc.want {
			f.must(typ)
		}
		appendText(t, c, tc.session, "live")
		if e := f.must("message.appended"); !strings.Contains(e.Data, `"live"`) {
			t.Errorf("%s after_seq=%d: then %s; want the live message", tc.session, tc.seq, e.Data)
		}
	}
}

// A quiet feed sends heartbeat comments, so that proxies and clients know
// it is alive.
func TestEventsHeartbeatWhenQuiet(t *testing.T) {
	c := newClient(t, withEventsHeartbeat(20*time.Millisecond))
	mustCreateSession(t, c, map[string]any{"id": "s"})
	f := openFeed(t, c, "/v1/sessions/s/events")
	beats, done := make(chan struct{}), make(chan struct{})
	// The reader must be gone before f.close (an earlier cleanup) drains the
	// same bufio.Reader; cleanups run last-registered first.
	t.Cleanup(func() { f.res.Body.Close(); <-done })
	go func() {
		defer close(done)
		n := 0
		for {
			line, err := f.rd.ReadString('\n')
			if err != nil {
				return
			}
			if line == ": heartbeat\n" {
				if n++; n == 3 {
					close(beats)
				}
			}
		}
	}()
	select {
	case <-beats:
	case <-time.After(10 * time.Second):
		t.Fatal("no three heartbeats from a quiet feed")
	}
}

// Close (the server's shutdown) ends every live feed at once, cleanly.
func TestEventsEndOnShutdown(t *testing.T) {
	loadSpec(t)
	st := mustOpen(t, testConfig{}.repo)
	srv := api.New(api.Config{Store: st, Log: zerolog.Nop(), Spec: logbook.OpenAPI, AllowOpen: true})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := &client{t: t, base: ts.URL, http: ts.Client(), store: st}
	mustCreateSession(t, c, map[string]any{"id": "s"})
	f := openFeed(t, c, "/v1/sessions/s/events")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = f.next(time.Minute)
	}()
	srv.Close()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the feed did not end after Close")
	}
}

// Two servers on one database (two Logbook processes on one PostgreSQL, or
// a second process on the SQLite file): a reader of one sees what writers of
// both append, in seq order, each once. The log shows how long an append
// took to reach the reader on the other server.
func TestEventsAcrossTwoServers(t *testing.T) {
	const writers, each = 8, 10
	path := t.TempDir() + "/shared.db"
	c1, c2 := newClient(t, withDB(path)), newClient(t, withDB(path))
	mustCreateSession(t, c1, map[string]any{"id": "s"})
	f := openFeed(t, c1, "/v1/sessions/s/events?type=message.appended")
	sent := sync.Map{} // content → when its 201 came
	var wg sync.WaitGroup
	for w := range writers {
		c := c1
		if w%2 == 1 {
			c = c2
		}
		wg.Go(func() {
			for i := range each {
				text := fmt.Sprintf("w%d-%d", w, i)
				res := c.do("POST", "/v1/sessions/s/messages", map[string]any{"role": "user", "content": text})
				if res.Status != 201 {
					t.Errorf("append: %d %s", res.Status, res.Body)
					return
				}
				sent.Store(text, time.Now())
			}
		})
	}
	var delays []time.Duration
	for seq := int64(1); seq <= writers*each; seq++ {
		e := f.must("message.appended")
		now := time.Now()
		var m model.Message
		if err := json.Unmarshal([]byte(e.Data), &m); err != nil || m.Seq != seq {
			t.Fatalf("event %s = %s; want seq %d", e.ID, e.Data, seq)
		}
		if at, ok := sent.Load(m.Content.Text); ok {
			delays = append(delays, now.Sub(at.(time.Time)))
		}
	}
	wg.Wait()
	slices.Sort(delays)
	if len(delays) > 0 {
		t.Logf("append (201) to event on the other server, %d samples: p50 %v, max %v",
			len(delays), delays[len(delays)/2].Round(time.Microsecond), delays[len(delays)-1].Round(time.Microsecond))
	}
}
