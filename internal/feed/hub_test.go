package feed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustOpen(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func appendN(t *testing.T, st *sqlite.Store, session string, from, n int) {
	t.Helper()
	for i := range n {
		m := model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("m%d", from+i))}
		if _, err := st.AppendMessages(context.Background(), "t", session, model.AppendRequest{Messages: []model.NewMessage{m}}); err != nil {
			t.Fatal(err)
		}
	}
}

// readSeqs reads message events until it has want of them, failing on any
// seq out of order.
func readSeqs(t *testing.T, r *feed.Reader, want int) {
	t.Helper()
	got := 0
	for got < want {
		evs, err := r.Next(context.Background(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			t.Fatalf("no events after %d of %d", got, want)
		}
		for _, e := range evs {
			var m model.Message
			if err := json.Unmarshal(e.Data, &m); err != nil || m.Seq != int64(got+1) {
				t.Fatalf("event %d = %s; want seq %d", e.Pos, e.Data, got+1)
			}
			got++
		}
	}
}

// A reader far behind what memory holds (here 5 events) reads the store, then
// joins memory, in order and without a gap, while writers go on; readers of
// other sessions and types see none of these.
func TestReaderCatchesUpFromTheStoreIntoMemory(t *testing.T) {
	st := mustOpen(t)
	ctx := context.Background()
	for _, id := range []string{"s", "other"} {
		if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	appendN(t, st, "s", 1, 40)
	h := feed.New(st, feed.Options{MaxEvents: 5})
	q := model.EventQuery{SessionID: "s", Types: []model.EventType{model.EventMessageAppended}, Limit: 7}
	r := h.Subscribe("t", q)
	defer r.Close()
	other := h.Subscribe("t", model.EventQuery{SessionID: "other", Types: []model.EventType{model.EventMessageAppended}})
	defer other.Close()

	var wg sync.WaitGroup
	wg.Go(func() { appendN(t, st, "s", 41, 60) })
	readSeqs(t, r, 100)
	wg.Wait()
	if evs, err := other.Next(ctx, 50*time.Millisecond); err != nil || len(evs) != 0 {
		t.Errorf("the other session's reader got %d events (%v); want none", len(evs), err)
	}
}

// The hub follows the log only while someone reads: it stops with its last
// reader (goleak checks), and a reader after that starts it again.
func TestHubStopsWithItsLastReader(t *testing.T) {
	st := mustOpen(t)
	ctx := context.Background()
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	h := feed.New(st, feed.Options{})
	q := model.EventQuery{SessionID: "s", Types: []model.EventType{model.EventMessageAppended}}
	r := h.Subscribe("t", q)
	appendN(t, st, "s", 1, 3)
	readSeqs(t, r, 3)
	r.Close()
	appendN(t, st, "s", 4, 3)
	r2 := h.Subscribe("t", q)
	defer r2.Close()
	readSeqs(t, r2, 6)
}

// waitBuffered waits until the hub follows the log and its ring holds at
// least n events.
func waitBuffered(t *testing.T, h *feed.Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for st := h.Stats(); !st.Following || st.Buffered < n; st = h.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("the ring holds %d events; want %d", h.Stats().Buffered, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitHead waits until the hub has read the store's log through pos.
func waitHead(t *testing.T, h *feed.Hub, pos int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.Stats().Head < pos {
		if time.Now().After(deadline) {
			t.Fatalf("the hub read the log through %d; want %d", h.Stats().Head, pos)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// drain reads a reader's batches until one wait passes with nothing new.
func drain(t *testing.T, r *feed.Reader, each func([]model.Event)) {
	t.Helper()
	for {
		evs, err := r.Next(context.Background(), 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return
		}
		each(evs)
	}
}

// A reader served from memory gets batches within its byte bound too: a
// batch stops once its data passes it, with at least one event.
func TestRingBatchesAreBoundedInBytes(t *testing.T) {
	st := mustOpen(t)
	ctx := context.Background()
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	head, err := st.EventHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := feed.New(st, feed.Options{})
	const budget = 100 << 10
	r := h.Subscribe("t", model.EventQuery{SessionID: "s", After: head, MaxBytes: budget})
	defer r.Close()
	waitBuffered(t, h, 0)
	for i := range 12 {
		m := model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("%d %s", i, strings.Repeat("x", 40<<10)))}
		if _, err := st.AppendMessages(ctx, "t", "s", model.AppendRequest{Messages: []model.NewMessage{m}}); err != nil {
			t.Fatal(err)
		}
	}
	waitBuffered(t, h, 12)
	got, batches := 0, 0
	drain(t, r, func(evs []model.Event) {
		batches++
		size := 0
		for i, e := range evs {
			if i > 0 && size >= budget {
				t.Errorf("a batch of %d events goes on after %d bytes; the bound is %d", len(evs), size, budget)
			}
			size += len(e.Data)
		}
		got += len(evs)
	})
	if got != 12 || batches < 4 {
		t.Errorf("%d events in %d batches; want 12 in at least 4 (three 40 KiB messages pass 100 KiB)", got, batches)
	}
}

// After a rewind, memory serves exactly what the store would: the removed
// messages are absent (the session.rewound event tells), the messages the
// rewind appended follow it.
func TestRingServesWhatTheStoreWouldAfterARewind(t *testing.T) {
	st := mustOpen(t)
	ctx := context.Background()
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	head, err := st.EventHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := feed.New(st, feed.Options{})
	live := h.Subscribe("t", model.EventQuery{After: head}) // starts the tail at head
	defer live.Close()
	waitBuffered(t, h, 0)
	appendN(t, st, "s", 1, 5)
	to := int64(2)
	again := []model.NewMessage{{Role: model.RoleUser, Content: model.TextContent("again")}}
	if _, err := st.Rewind(ctx, "t", "s", model.Rewind{ToSeq: &to, Messages: again}); err != nil {
		t.Fatal(err)
	}
	appendN(t, st, "s", 4, 1)
	// Only once the hub has read the log through its last write is the
	// ring's content the one to compare: five events are also buffered
	// before the rewind is read (three of them since removed).
	last, err := st.EventHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitHead(t, h, last)
	waitBuffered(t, h, 5) // 2 kept, the rewind, its message, the last

	type seen struct {
		pos  int64
		typ  model.EventType
		data string
	}
	var fromRing, fromStore []seen
	r := h.Subscribe("t", model.EventQuery{SessionID: "s", After: head})
	defer r.Close()
	drain(t, r, func(evs []model.Event) {
		for _, e := range evs {
			fromRing = append(fromRing, seen{e.Pos, e.Type, string(e.Data)})
		}
	})
	b, err := st.ListEvents(ctx, "t", model.EventQuery{SessionID: "s", After: head, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Events {
		fromStore = append(fromStore, seen{e.Pos, e.Type, string(e.Data)})
	}
	if !slices.Equal(fromRing, fromStore) {
		t.Errorf("memory served %d events, the store %d:\nmemory: %v\nstore:  %v", len(fromRing), len(fromStore), fromRing, fromStore)
	}
	var types []model.EventType
	for _, e := range fromStore {
		types = append(types, e.typ)
	}
	want := []model.EventType{model.EventMessageAppended, model.EventMessageAppended, model.EventSessionRewound,
		model.EventMessageAppended, model.EventMessageAppended}
	if !slices.Equal(types, want) {
		t.Errorf("events %v; want %v", types, want)
	}
}
