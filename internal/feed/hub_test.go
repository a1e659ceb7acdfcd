package feed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
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
