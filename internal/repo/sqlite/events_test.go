package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// feedEvent is what a test compares of an event.
type feedEvent struct {
	Pos     int64
	Type    model.EventType
	Session string
	Seq     int64
}

func (e feedEvent) String() string {
	return fmt.Sprintf("%d:%s:%s:%d", e.Pos, e.Type, e.Session, e.Seq)
}

// readFeed reads every event q selects after q.After, a few at a time.
func readFeed(t *testing.T, s *Store, tenant string, q model.EventQuery) []feedEvent {
	t.Helper()
	var out []feedEvent
	for range 10000 {
		b, err := s.ListEvents(context.Background(), tenant, q)
		if err != nil {
			t.Fatal(err)
		}
		if b.Through < q.After {
			t.Fatalf("read after %d went back to %d", q.After, b.Through)
		}
		for _, e := range b.Events {
			if e.Pos <= q.After || e.Pos > b.Through {
				t.Fatalf("event %d outside the read (%d, %d]", e.Pos, q.After, b.Through)
			}
			out = append(out, feedEvent{e.Pos, e.Type, e.SessionID, e.Seq})
		}
		q.After = b.Through
		if !b.More {
			return out
		}
	}
	t.Fatal("the feed does not end")
	return nil
}

func after(evs []feedEvent, pos int64) []feedEvent {
	i := slices.IndexFunc(evs, func(e feedEvent) bool { return e.Pos > pos })
	if i < 0 {
		return nil
	}
	return evs[i:]
}

// The feed shows what sessions appended, in gid order, and nothing of what
// they did not: a fork's copies of its parent's messages (taken when the
// parent is purged) and imported messages are no events. From every
// position, a session's read (a binary search of its seqs) and a tenant's
// read (stretches of messages_by_gid) give the events after it, exactly.
func TestFeedShowsWhatSessionsAppended(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	purgeSession(t, s, "p")
	purgeAppend(t, s, "p", "a", "b", "c")
	purgeFork(t, s, "p", "f", 2)
	purgeAppend(t, s, "f", "x", "y")
	purgeSession(t, s, "other")
	purgeAppend(t, s, "other", "o1")
	if err := s.PurgeSession(ctx, "t", "p"); err != nil { // f takes copies of seqs 1 and 2
		t.Fatal(err)
	}
	purgeAppend(t, s, "f", "z")
	var export bytes.Buffer
	if err := s.ExportSession(ctx, "t", "f", &export); err != nil {
		t.Fatal(err)
	}
	im, err := s.ImportSession(ctx, "t", &export, model.ImportOptions{AsNew: true})
	if err != nil {
		t.Fatal(err)
	}
	purgeAppend(t, s, im.ID, "after import")
	to := int64(4)
	if _, err := s.Rewind(ctx, "t", "f", model.Rewind{ToSeq: &to}); err != nil {
		t.Fatal(err)
	}
	purgeAppend(t, s, "f", "w")

	all := readFeed(t, s, "t", model.EventQuery{Limit: 3})
	var msgs []string
	for _, e := range all {
		if e.Type == model.EventMessageAppended {
			msgs = append(msgs, fmt.Sprintf("%s:%d", e.Session, e.Seq))
		}
	}
	// p's messages went with p; f's own: x (3), y (4), z (5, rewound), w (5).
	want := []string{"f:3", "f:4", "other:1", im.ID + ":6", "f:5"}
	if !slices.Equal(msgs, want) {
		t.Errorf("message events %v; want %v\nall: %v", msgs, want, all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Pos <= all[i-1].Pos {
			t.Fatalf("positions do not grow: %v", all)
		}
	}
	head, err := s.EventHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, session := range []string{"f", "other", im.ID} {
		var mine []feedEvent
		for _, e := range all {
			if e.Session == session {
				mine = append(mine, e)
			}
		}
		for pos := int64(0); pos <= head; pos++ {
			for _, limit := range []int{1, 100} {
				got := readFeed(t, s, "t", model.EventQuery{SessionID: session, After: pos, Limit: limit})
				if w := after(mine, pos); !slices.Equal(got, w) {
					t.Fatalf("session %s after %d (limit %d): %v; want %v", session, pos, limit, got, w)
				}
			}
			got := readFeed(t, s, "t", model.EventQuery{SessionID: session, After: pos, Types: []model.EventType{model.EventMessageAppended}})
			w := slices.DeleteFunc(slices.Clone(after(mine, pos)), func(e feedEvent) bool { return e.Type != model.EventMessageAppended })
			if !slices.Equal(got, w) {
				t.Fatalf("session %s messages after %d: %v; want %v", session, pos, got, w)
			}
		}
	}
	for pos := int64(0); pos <= head; pos++ {
		if got := readFeed(t, s, "t", model.EventQuery{After: pos, Limit: 2}); !slices.Equal(got, after(all, pos)) {
			t.Fatalf("tenant after %d: %v; want %v", pos, got, after(all, pos))
		}
	}

	// after_seq of a message the session did not append starts at its creation.
	for _, tc := range []struct {
		session string
		seq     int64
		first   model.EventType
	}{{"f", 1, model.EventSessionCreated}, {"f", 2, model.EventSessionCreated}, {im.ID, 3, model.EventSessionCreated}, {im.ID, 5, model.EventSessionCreated}, {"f", 3, model.EventMessageAppended}} {
		pos, err := s.EventPosOfSeq(ctx, "t", tc.session, tc.seq)
		if err != nil {
			t.Fatal(err)
		}
		got := readFeed(t, s, "t", model.EventQuery{SessionID: tc.session, After: pos})
		if len(got) == 0 || got[0].Type != tc.first {
			t.Errorf("%s after seq %d (pos %d): %v; want it to start with %s", tc.session, tc.seq, pos, got, tc.first)
		}
	}
}

// Migration 00025 moved the feed into the gid space. Taking it down gives a
// row per event again (message rows at their gids), and up again derives the
// same feed: the same events, the messages in the same order, the copies
// and imports still left out, and the embedding queue's place kept.
func TestFeedMigrationRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	ctx := context.Background()
	s, err := Open(ctx, Config{Path: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	purgeSession(t, s, "p")
	purgeAppend(t, s, "p", "a", "b", "c")
	purgeFork(t, s, "p", "f", 2)
	purgeAppend(t, s, "f", "x")
	purgeSession(t, s, "q")
	purgeAppend(t, s, "q", "q1", "q2")
	if err := s.PurgeSession(ctx, "t", "p"); err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := s.ExportSession(ctx, "t", "q", &export); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportSession(ctx, "t", &export, model.ImportOptions{AsNew: true}); err != nil {
		t.Fatal(err)
	}
	purgeAppend(t, s, "f", "y")
	before := readFeed(t, s, "t", model.EventQuery{Limit: 100})
	var cursor int64
	for _, e := range before {
		if e.Type == model.EventMessageAppended && e.Session == "q" && e.Seq == 2 {
			cursor = e.Pos
		}
	}
	if _, err := s.wdb.ExecContext(ctx, `UPDATE embedding_cursor SET pos = ?`, cursor); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	migrateDownTo(t, path, 24) // 00025 and the migrations after it
	if err := Migrate(ctx, path, "up", io.Discard); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := readFeed(t, s, "t", model.EventQuery{Limit: 100})

	key := func(evs []feedEvent, messages bool) []string {
		var out []string
		for _, e := range evs {
			if (e.Type == model.EventMessageAppended) == messages {
				out = append(out, fmt.Sprintf("%s:%s:%d", e.Type, e.Session, e.Seq))
			}
		}
		if !messages {
			slices.Sort(out) // the session events moved above the messages, in their order
		}
		return out
	}
	for _, messages := range []bool{true, false} {
		if a, b := key(before, messages), key(got, messages); !slices.Equal(a, b) {
			t.Errorf("messages %v: before %v\nafter %v", messages, a, b)
		}
	}
	var pos int64
	if err := s.rdb.QueryRowContext(ctx, `SELECT pos FROM embedding_cursor`).Scan(&pos); err != nil || pos != cursor {
		t.Errorf("embedding cursor = %d (%v); want %d", pos, err, cursor)
	}
}

// migrateDownTo rolls the database at path back to version.
func migrateDownTo(t *testing.T, path string, version int64) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, false, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	p, err := provider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(context.Background(), version); err != nil {
		t.Fatal(err)
	}
}
