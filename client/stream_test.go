package client_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

func userMessages(n int, format string) []api.MessageInput {
	msgs := make([]api.MessageInput, n)
	for i := range msgs {
		msgs[i] = api.MessageInput{Role: api.MessageRoleUser, Content: client.Text(fmt.Sprintf(format, i+1)), Tokens: client.Ptr[int64](1)}
	}
	return msgs
}

// wantStored fails unless results are msgs stored in order, the first at seq
// from, and the session holds exactly last messages.
func wantStored(t *testing.T, c *client.Client, sessionID string, results []client.LineResult, msgs []api.MessageInput, from, last int64) {
	t.Helper()
	if len(results) != len(msgs) {
		t.Fatalf("%d results for %d messages", len(results), len(msgs))
	}
	for i, r := range results {
		if r.Err != nil || r.Message == nil {
			t.Fatalf("result %d: %+v", i, r)
		}
		if r.Line != i+1 || r.Key == "" || r.Message.Seq != from+int64(i) || client.TextOf(r.Message.Content) != client.TextOf(*msgs[i].Content) {
			t.Fatalf("result %d: line %d, key %q, seq %d, %q; want line %d, seq %d, %q", i, r.Line, r.Key,
				r.Message.Seq, client.TextOf(r.Message.Content), i+1, from+int64(i), client.TextOf(*msgs[i].Content))
		}
	}
	s, err := c.GetSession(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq != last || s.MessageCount != last {
		t.Fatalf("session last_seq %d, message_count %d; want %d", s.LastSeq, s.MessageCount, last)
	}
}

// The scenarios that depend on the backend run on SQLite (the package's
// server) and on PostgreSQL (TestStreamsOnPostgres).
func TestAppendManyStoresAThousandInOrder(t *testing.T)  { thousandInOrder(t, server.url) }
func TestAppendManyStopsAtTheFirstRefusal(t *testing.T)  { stopsAtTheFirstRefusal(t, server.url) }
func TestStreamWriterRetriesACutConnection(t *testing.T) { retriesACutConnection(t, server.url) }

func TestStreamsOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and a second server")
	}
	stop, url, err := startServer(startPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	t.Run("thousand_in_order", func(t *testing.T) { thousandInOrder(t, url) })
	t.Run("stops_at_the_first_refusal", func(t *testing.T) { stopsAtTheFirstRefusal(t, url) })
	t.Run("retries_a_cut_connection", func(t *testing.T) { retriesACutConnection(t, url) })
}

// A thousand messages go on one request and are stored in order, each with
// its own key; the same load sent again under the same KeyPrefix stores
// nothing and answers what the first stored.
func thousandInOrder(t *testing.T, base string) {
	ctx := context.Background()
	c, chk := newClient(t, base)
	s := newSession(t, c)
	msgs := userMessages(1000, "message %d")
	opts := &client.StreamOptions{KeyPrefix: "load-1:"}

	before := chk.requests.Load()
	res, err := c.AppendMany(ctx, s.ID, msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := chk.requests.Load() - before; got != 1 {
		t.Errorf("%d requests for 1000 messages, want 1", got)
	}
	wantStored(t, c, s.ID, res, msgs, 1, 1000)
	if res[41].Key != "load-1:42" {
		t.Errorf("message 42's key %q, want load-1:42", res[41].Key)
	}

	again, err := c.AppendMany(ctx, s.ID, msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, c, s.ID, again, msgs, 1, 1000)
	if again[999].Message.ID != res[999].Message.ID {
		t.Errorf("the resend answered %s, want the stored %s", again[999].Message.ID, res[999].Message.ID)
	}
}

// The first message the server refuses stops the stream: those before it
// are stored, it has its problem (naming its line), and those after it are
// stream_stopped and not stored. Refusals found when the line is read
// (validation), when it commits (a key reused for another message), and for
// the whole request (no such session) all read the same.
func stopsAtTheFirstRefusal(t *testing.T, base string) {
	ctx := context.Background()
	c, _ := newClient(t, base)
	conflicted := newSession(t, c)
	if _, err := c.AppendMany(ctx, conflicted.ID, []api.MessageInput{{Role: api.MessageRoleUser,
		Content: client.Text("first"), IdempotencyKey: client.Ptr("taken")}}, nil); err != nil {
		t.Fatal(err)
	}
	noCall := api.MessageInput{Role: api.MessageRoleTool, Content: client.Text(`{"refundable": true}`)}
	reused := api.MessageInput{Role: api.MessageRoleUser, Content: client.Text("another"), IdempotencyKey: client.Ptr("taken")}

	for _, tc := range []struct {
		name      string
		session   string
		bad       api.MessageInput
		at        int // the refused message's line
		code      api.ErrorCode
		field     string
		lastSeq   int64
		noSession bool
	}{
		{name: "tool_result_without_its_call", session: newSession(t, c).ID, bad: noCall, at: 4, code: api.ErrorCodeValidationFailed, field: "tool_call_id", lastSeq: 3},
		{name: "key_of_another_message", session: conflicted.ID, bad: reused, at: 2, code: api.ErrorCodeIdempotencyConflict, lastSeq: 2},
		{name: "no_such_session", session: "ses_nope", bad: noCall, at: 1, code: api.ErrorCodeNotFound, noSession: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := userMessages(8, tc.name+" %d")
			msgs[tc.at-1] = tc.bad
			res, err := c.AppendMany(ctx, tc.session, msgs, nil)
			var le *client.LineError
			if !errors.As(err, &le) || le.Line != tc.at || client.Code(err) != tc.code {
				t.Fatalf("err = %v, want line %d's %s", err, tc.at, tc.code)
			}
			if n := strings.Count(err.Error(), fmt.Sprintf("line %d", tc.at)); n != 1 {
				t.Errorf("%q names the line %d times, want once", err, n)
			}
			if len(res) != len(msgs) {
				t.Fatalf("%d results for %d messages", len(res), len(msgs))
			}
			for i, r := range res {
				n := i + 1
				switch {
				case n < tc.at && (r.Err != nil || r.Message == nil):
					t.Errorf("line %d: %v, want stored", n, r.Err)
				case n == tc.at:
					var p *client.Problem
					if !errors.As(r.Err, &p) || p.Code != tc.code || !r.Err.(*client.LineError).Refused() {
						t.Fatalf("line %d: %v, want %s", n, r.Err, tc.code)
					}
					if !tc.noSession && (p.Line == nil || *p.Line != n) {
						t.Errorf("line %d's problem names line %v", n, p.Line)
					}
					if _, ok := p.Field(tc.field); tc.field != "" && !ok {
						t.Errorf("line %d's problem names no %s: %+v", n, tc.field, p.Errors)
					}
				case n > tc.at && (client.Code(r.Err) != api.ErrorCodeStreamStopped || !r.Err.(*client.LineError).Refused()):
					t.Errorf("line %d: %v, want stream_stopped", n, r.Err)
				}
			}
			if tc.noSession {
				return
			}
			if s, err := c.GetSession(ctx, tc.session); err != nil || s.LastSeq != tc.lastSeq {
				t.Fatalf("session: %+v, %v; want last_seq %d", s, err, tc.lastSeq)
			}
		})
	}
}

// A connection cut midway, in the request (mid-line) or in the answer (after
// the server stored messages whose answers never came), is retried from the
// first message not answered, and the server stores every message once.
func retriesACutConnection(t *testing.T, base string) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fault tcpFault
	}{
		{"request_cut_midway", tcpFault{cutRequestAfter: 16 << 10}},
		{"answer_cut_midway", tcpFault{cutAnswerAfter: 4 << 10}},
		{"answered_503", tcpFault{answer: problemAnswer(503, "storage_unavailable")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct, _ := newClient(t, base)
			s := newSession(t, direct)
			proxy := newTCPProxy(t, base)
			proxy.plan(tc.fault) // the stream's first connection
			c, _ := newClient(t, proxy.url, client.WithRetries(4, time.Millisecond, 10*time.Millisecond))
			msgs := userMessages(500, tc.name+" %d")
			w, err := c.OpenStream(ctx, s.ID, &client.StreamOptions{Window: 64})
			if err != nil {
				t.Fatal(err)
			}
			results := w.Results()
			go func() {
				for _, m := range msgs {
					if w.Send(m) != nil {
						return
					}
				}
				_ = w.Close()
			}()
			var got []client.LineResult
			for r := range results {
				got = append(got, r)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if n := proxy.connectionCount(); n < 2 {
				t.Errorf("%d connections, want the broken one and a retry", n)
			}
			wantStored(t, direct, s.ID, got, msgs, 1, 500)
		})
	}
}

// The writer never has more messages on their way than its window, however
// fast the caller sends.
func TestStreamWriterKeepsToItsWindow(t *testing.T) {
	ctx := context.Background()
	direct, _ := newClient(t, server.url)
	s := newSession(t, direct)
	proxy := newTCPProxy(t, server.url)
	// Answers not gzipped, so that the proxy can count their lines.
	c, _ := newClient(t, proxy.url, client.WithHTTPClient(&http.Client{Transport: &checker{t: t,
		next: &http.Transport{DisableCompression: true}}}))
	msgs := userMessages(300, "windowed %d")
	res, err := c.AppendMany(ctx, s.ID, msgs, &client.StreamOptions{Window: 8})
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, c, s.ID, res, msgs, 1, 300)
	if got := proxy.sent.Load(); got != 300 {
		t.Fatalf("the proxy counted %d message lines, want 300", got)
	}
	if got := proxy.maxInFlight.Load(); got > 8 {
		t.Errorf("%d messages were on their way at once, want at most the window's 8", got)
	}
}

// A writer fed one message at a time, each sent once the one before is
// answered, and a request age shorter than the wait: each goes on a request
// of its own, and their results still come in order.
func TestStreamWriterStartsANewRequestWhenOneIsOld(t *testing.T) {
	ctx := context.Background()
	c, chk := newClient(t, server.url)
	s := newSession(t, c)
	w, err := c.OpenStream(ctx, s.ID, &client.StreamOptions{RequestAge: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull(w.Results())
	defer stop()
	before := chk.requests.Load()
	msgs := userMessages(5, "slow %d")
	var got []client.LineResult
	for _, m := range msgs {
		if err := w.Send(m); err != nil {
			t.Fatal(err)
		}
		r, ok := next()
		if !ok {
			t.Fatal("results ended early")
		}
		got = append(got, r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := next(); ok {
		t.Error("a result after the last message")
	}
	if n := chk.requests.Load() - before; n != 5 {
		t.Errorf("%d requests, want one per message", n)
	}
	wantStored(t, c, s.ID, got, msgs, 1, 5)
}

// After the stream stopped, Send answers the refused message's error and
// Close the same; Send after Close is ErrStreamClosed.
func TestStreamWriterAfterItStopped(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	s := newSession(t, c)
	w, err := c.OpenStream(ctx, s.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Send(api.MessageInput{Role: api.MessageRoleTool, Content: client.Text("no call")}); err != nil {
		t.Fatal(err)
	}
	closeErr := w.Close()
	if client.Code(closeErr) != api.ErrorCodeValidationFailed {
		t.Fatalf("Close: %v, want validation_failed", closeErr)
	}
	if err := w.Send(userMessages(1, "late %d")[0]); err != closeErr {
		t.Errorf("Send after the stream stopped: %v, want %v", err, closeErr)
	}

	w, _ = c.OpenStream(ctx, s.ID, nil)
	if err := w.Close(); err != nil {
		t.Fatalf("closing a stream that sent nothing: %v", err)
	}
	if err := w.Send(userMessages(1, "late %d")[0]); !errors.Is(err, client.ErrStreamClosed) {
		t.Errorf("Send after Close: %v, want ErrStreamClosed", err)
	}
	if _, err := c.OpenStream(ctx, s.ID, &client.StreamOptions{KeyPrefix: "bad\n"}); err == nil {
		t.Error("a key prefix with a line break was taken")
	}
}

// problemAnswer is a whole HTTP answer carrying a problem, as a proxy in
// front of the server might send it.
func problemAnswer(status int, code string) string {
	body := fmt.Sprintf(`{"type":"urn:logbook:problem:%s","title":%q,"status":%d,"detail":"injected by the test proxy","code":%q}`,
		code, http.StatusText(status), status, code)
	return fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\nRetry-After: 0\r\nX-Request-Id: proxy\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", status, http.StatusText(status), len(body), body)
}
