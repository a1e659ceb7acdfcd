package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// appendN appends one message to each session from its own goroutine, all
// queued behind a blocked writer so that they form one group, and returns each
// append's outcome.
func appendGroup(t *testing.T, s *Store, sessions []string) []error {
	t.Helper()
	release, blocked := blockWriter(t, s)
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, id := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.AppendMessages(context.Background(), "t", id,
				model.AppendRequest{Messages: []model.NewMessage{{Role: model.RoleUser, Content: model.TextContent(fmt.Sprint("m", i))}}})
		}()
	}
	waitQueued(t, s, len(sessions))
	release()
	wg.Wait()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	return errs
}

// Appends of one group are staged and written together, without a savepoint
// each. If writing them fails (here an injected fault at the flush), the group
// is replayed one write at a time: only the write at fault fails, the others
// commit, and the writer's record of each session stays true.
func TestFailedFlushIsReplayedWriteByWrite(t *testing.T) {
	f, err := repo.NewFaults(7, repo.FaultRule{Point: repo.PointAppendFlush, Kind: repo.FaultError, Rate: 1, Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), Config{Path: t.TempDir() + "/l.db", Migrate: true, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ids := []string{"a", "b", "c", "d"}
	for _, id := range ids {
		purgeSession(t, s, id)
	}
	errs := appendGroup(t, s, ids)
	failed := 0
	for i, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, model.ErrUnavailable):
			failed++
		default:
			t.Errorf("append %d: %v", i, err)
		}
	}
	// The group's flush failed once; in the replay the fault is spent, so every
	// append commits alone.
	if ev := f.Events(); len(ev) != 1 || ev[0].Point != repo.PointAppendFlush {
		t.Fatalf("faults fired: %v, want one at the flush", ev)
	}
	if failed != 0 {
		t.Errorf("%d appends failed after the replay, want 0", failed)
	}
	for _, id := range ids {
		ses, err := s.GetSession(context.Background(), "t", id)
		if err != nil || ses.LastSeq != 1 || ses.MessageCount != 1 || ses.Status != model.StatusActive {
			t.Errorf("%s after the replay: %+v %v", id, ses, err)
		}
	}
	// The record was reset with the failed group: the next appends continue at 2.
	errs = appendGroup(t, s, ids)
	for i, err := range errs {
		if err != nil {
			t.Errorf("second append %d: %v", i, err)
		}
	}
	for _, id := range ids {
		if ses, _ := s.GetSession(context.Background(), "t", id); ses.LastSeq != 2 || ses.MessageCount != 2 {
			t.Errorf("%s: last_seq %d, message_count %d, want 2", id, ses.LastSeq, ses.MessageCount)
		}
	}
}

// The writer keeps each session's seq and counters in memory. Another process
// writing the same file (the CLI's import, a repair by hand) must not make it
// hand out a seq twice or append to a session that was closed meanwhile.
func TestWriterNoticesAnotherProcess(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	purgeSession(t, s, "x")
	purgeAppend(t, s, "x", "one", "two")

	other, err := sql.Open("sqlite", "file:"+s.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`INSERT INTO messages (tenant_id, session_id, seq, id, role, content, tokens, cost, created_at, gid, cum_tokens, cum_cost)
		VALUES ('t', 'x', 3, 'msg_from_elsewhere', 'user', 'three', 0, 0, 1, (SELECT MAX(gid) + 1 FROM messages), 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(`UPDATE sessions SET last_seq = 3, message_count = 3 WHERE tenant_id = 't' AND id = 'x'`); err != nil {
		t.Fatal(err)
	}
	res, err := s.AppendMessages(ctx, "t", "x", model.AppendRequest{Messages: []model.NewMessage{{Role: model.RoleUser, Content: model.TextContent("four")}}})
	if err != nil || res.Messages[0].Seq != 4 {
		t.Fatalf("append after another process wrote seq 3: %+v %v, want seq 4", res, err)
	}
	if _, err := other.Exec(`UPDATE sessions SET status = 'completed' WHERE tenant_id = 't' AND id = 'x'`); err != nil {
		t.Fatal(err)
	}
	_, err = s.AppendMessages(ctx, "t", "x", model.AppendRequest{Messages: []model.NewMessage{{Role: model.RoleUser, Content: model.TextContent("five")}}})
	if !errors.Is(err, model.ErrSessionClosed) {
		t.Fatalf("append to a session another process closed: %v, want session_closed", err)
	}
}

// A status change through the API goes through the writer, which forgets its
// record of the session: an append right after a close is refused.
func TestCloseThenAppendInOneGroup(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	purgeSession(t, s, "y")
	purgeAppend(t, s, "y", "one")
	release, blocked := blockWriter(t, s)
	var wg sync.WaitGroup
	var closeErr, appendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, closeErr = s.CloseSession(ctx, "t", "y")
	}()
	waitQueued(t, s, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, appendErr = s.AppendMessages(ctx, "t", "y", model.AppendRequest{Messages: []model.NewMessage{{Role: model.RoleUser, Content: model.TextContent("two")}}})
	}()
	waitQueued(t, s, 2)
	release()
	wg.Wait()
	<-blocked
	if closeErr != nil || !errors.Is(appendErr, model.ErrSessionClosed) {
		t.Fatalf("close: %v; append after it in the same group: %v, want session_closed", closeErr, appendErr)
	}
}
