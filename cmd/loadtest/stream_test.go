package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/rs/zerolog"
)

// The stream round's client against Logbook's real handler: every send of a
// window of lines stores that many messages, all answered before the next
// send, and closing leaves nothing unread.
func TestStreamConnAppendsAWindowPerSend(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true, NoMessageIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := httptest.NewServer(api.New(api.Config{Store: store, Log: zerolog.Nop(), MaxBodyBytes: 1 << 20, AllowOpen: true}))
	defer srv.Close()
	if _, err := store.CreateSession(ctx, model.DefaultTenant, model.CreateSession{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	c := newClient()
	c.Timeout = 0
	s, err := openStream(ctx, c, srv.URL+"/v1/sessions/s1/messages", mustJSON(messageJSON(0)))
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []int{1, 1, 5} {
		if err := s.send(window); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	got, err := store.GetSession(ctx, model.DefaultTenant, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got.MessageCount != 8 || got.LastSeq != 8 {
		t.Errorf("session has %d messages, last seq %d; want 8 and 8", got.MessageCount, got.LastSeq)
	}

	// A line the server refuses is an error of the send, not a silent count.
	s, err = openStream(ctx, c, srv.URL+"/v1/sessions/s1/messages", mustJSON(messageJSON(0)))
	if err != nil {
		t.Fatal(err)
	}
	s.line = []byte(`{"role":"nobody","content":"x"}` + "\n")
	if err := s.send(1); err == nil || !strings.Contains(err.Error(), "validation_failed") {
		t.Errorf("send of a bad line: %v, want the problem", err)
	}
	s.abort()

	// A stream to a session that does not exist fails at open, with the status.
	if _, err := openStream(ctx, c, srv.URL+"/v1/sessions/nope/messages", mustJSON(messageJSON(0))); err == nil ||
		!strings.Contains(err.Error(), "status 404") {
		t.Errorf("opening a stream to a missing session: %v, want status 404", err)
	}
}
