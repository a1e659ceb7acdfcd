package client_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

type feedItem struct {
	ev  api.Event
	err error
}

// follow runs a feed iterator in a goroutine, which the test's end waits for
// (after cancelling it): nothing may report to t after the test returned.
func follow(t *testing.T, feed func(ctx context.Context) func(func(api.Event, error) bool)) (<-chan feedItem, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	ch := make(chan feedItem)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for ev, err := range feed(ctx) {
			select {
			case ch <- feedItem{ev, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch, cancel
}

func nextMessage(t *testing.T, ch <-chan feedItem) (api.Event, api.Message) {
	t.Helper()
	select {
	case it, ok := <-ch:
		if !ok {
			t.Fatal("the feed ended")
		}
		if it.err != nil {
			t.Fatalf("feed error: %v", it.err)
		}
		if it.ev.Event != api.EventTypeMessageAppended || it.ev.ID == "" {
			t.Fatalf("event %q %q, want a message.appended with an id", it.ev.ID, it.ev.Event)
		}
		m, err := it.ev.Data.AsMessage()
		if err != nil {
			t.Fatalf("event data: %v", err)
		}
		return it.ev, m
	case <-time.After(10 * time.Second):
		t.Fatal("no event in 10s")
	}
	panic("unreachable")
}

func TestLiveFeedResumesAfterACut(t *testing.T) {
	ctx := context.Background()
	direct, _ := newClient(t, server.url)
	px := newProxy(t, server.url)
	c, _ := newClient(t, px.URL)
	s := newSession(t, direct)
	appendText := func(text string) {
		t.Helper()
		if _, err := direct.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text(text)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		appendText("before " + strconv.Itoa(i))
	}

	feed, stop := follow(t, func(ctx context.Context) func(func(api.Event, error) bool) {
		return c.Events(ctx, s.ID, &api.StreamSessionEventsParams{AfterSeq: client.Ptr[int64](0),
			Type: []api.EventType{api.EventTypeMessageAppended}})
	})
	var firstID, lastID string
	for i := int64(1); i <= 3; i++ {
		ev, m := nextMessage(t, feed)
		if m.Seq != i || ev.ID == lastID {
			t.Fatalf("event %s is seq %d, want seq %d after event %s", ev.ID, m.Seq, i, lastID)
		}
		if i == 1 {
			firstID = ev.ID
		}
		lastID = ev.ID
	}

	// Live: a message appended now arrives.
	appendText("live")
	ev, m := nextMessage(t, feed)
	if m.Seq != 4 || client.TextOf(m.Content) != "live" {
		t.Fatalf("live event = seq %d %q", m.Seq, client.TextOf(m.Content))
	}
	lastID = ev.ID

	// Cut the connection; what is appended meanwhile comes after the
	// reconnect, once each.
	px.CloseClientConnections()
	appendText("while cut 1")
	appendText("while cut 2")
	for i := int64(5); i <= 6; i++ {
		ev, m := nextMessage(t, feed)
		if m.Seq != i {
			t.Fatalf("after the cut: seq %d, want %d (event %s)", m.Seq, i, ev.ID)
		}
	}
	gets := px.requests("GET", "/"+s.ID+"/events")
	if len(gets) < 2 || gets[0].lastEventID != "" || gets[len(gets)-1].lastEventID != lastID {
		t.Errorf("feed requests = %+v, want a reconnect with Last-Event-ID %s", gets, lastID)
	}

	// The tenant feed, filtered to the session, after the first message's
	// event: an id of the session's feed is an id of the tenant's.
	tenant, stopTenant := follow(t, func(ctx context.Context) func(func(api.Event, error) bool) {
		return c.TenantEvents(ctx, &api.StreamEventsParams{After: client.Ptr(firstID), SessionID: client.Ptr(s.ID),
			Type: []api.EventType{api.EventTypeMessageAppended}})
	})
	for i := int64(2); i <= 6; i++ {
		if _, m := nextMessage(t, tenant); m.Seq != i || m.SessionID != s.ID {
			t.Fatalf("tenant feed: seq %d of %s, want seq %d of %s", m.Seq, m.SessionID, i, s.ID)
		}
	}
	stopTenant()

	// Cancelling ends the feed without an error.
	stop()
	select {
	case it, ok := <-feed:
		if ok {
			t.Errorf("after cancel: got %+v, want the end", it)
		}
	case <-time.After(5 * time.Second):
		t.Error("the feed did not end when its context did")
	}
}

func TestLiveFeedOfUnknownSessionIsNotFound(t *testing.T) {
	c, _ := newClient(t, server.url)
	n := 0
	for _, err := range c.Events(context.Background(), "no-such-session", nil) {
		n++
		if client.Code(err) != api.ErrorCodeNotFound {
			t.Errorf("err = %v, want not_found", err)
		}
	}
	if n != 1 {
		t.Errorf("yielded %d times, want once", n)
	}
}
