package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

func mustOpen(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "sub", "logbook.db"), Migrate: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestOpenPragmas(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	var mode string
	var syncLevel, fk int
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", mode, err)
	}
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncLevel); err != nil || syncLevel != 2 {
		t.Errorf("writer synchronous = %d (%v), want 2 (FULL)", syncLevel, err)
	}
	// Hold several read connections at once so that the pool opens more than one:
	// each must have the DSN's pragmas, not only the first.
	var conns []*sql.Conn
	for range 4 {
		c, err := s.rdb.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		var queryOnly int
		if err := c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
			t.Errorf("reader %d foreign_keys = %d (%v)", i, fk, err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA query_only").Scan(&queryOnly); err != nil || queryOnly != 1 {
			t.Errorf("reader %d query_only = %d (%v)", i, queryOnly, err)
		}
		if _, err := c.ExecContext(ctx, "DELETE FROM sessions"); err == nil {
			t.Errorf("reader %d could write", i)
		}
		c.Close()
	}
}

// blockWriter occupies the writer until release is closed, so that writes queued
// meanwhile are committed together as one group.
func blockWriter(t *testing.T, s *Store) (release func(), done <-chan error) {
	t.Helper()
	started, unblock := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- s.write(context.Background(), func(context.Context, *sql.Tx) error {
			close(started)
			<-unblock
			return nil
		})
	}()
	<-started
	return func() { close(unblock) }, errc
}

func TestGroupCommitIsolatesFailedWrites(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "taken"}); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	release, blocked := blockWriter(t, s)

	const n = 30
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("s%02d", i)
			if i%3 == 0 {
				id = "taken" // fails inside its savepoint; its neighbours must not notice
			}
			_, errs[i] = s.CreateSession(ctx, "t", model.CreateSession{ID: id})
		}()
	}
	waitQueued(t, s, n)
	release()
	wg.Wait()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}

	for i, err := range errs {
		if i%3 == 0 {
			if !errors.Is(err, model.ErrConflict) {
				t.Errorf("write %d: err = %v, want conflict", i, err)
			}
		} else if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	page, err := s.ListSessions(ctx, "t", model.SessionFilter{}, repo.PageRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(page.Data), 1+n-n/3; got != want {
		t.Errorf("%d sessions stored, want %d", got, want)
	}
	st := s.Stats()
	if commits, writes := st.Commits-before.Commits, st.Writes-before.Writes; commits != 2 || writes != n+1 {
		t.Errorf("%d writes in %d commits, want %d writes in 2 (the blocker, then one group)", writes, commits, n+1)
	}
}

func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := 0; len(s.queue) < n; i++ {
		if i > 1e7 {
			t.Fatalf("only %d of %d writes queued", len(s.queue), n)
		}
		runtime.Gosched()
	}
}

// A write that fails after changing rows leaves nothing behind.
func TestFailedWriteLeavesNoTrace(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	boom := errors.New("boom")
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO sessions (tenant_id, id, status, created_at, updated_at) VALUES ('t', 'ghost', 'created', 1, 1)`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if _, err := s.GetSession(ctx, "t", "ghost"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("failed write left a row: err = %v", err)
	}
}

// Once queued, a write reports its real outcome even if the caller's context ends:
// the caller must not be told "canceled" about a row that committed.
func TestQueuedWriteOutcomeOutlivesContext(t *testing.T) {
	s := mustOpen(t)
	ctx, cancel := context.WithCancel(context.Background())
	release, blocked := blockWriter(t, s)
	errc := make(chan error, 1)
	go func() {
		_, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "kept"})
		errc <- err
	}()
	waitQueued(t, s, 1)
	cancel()
	release()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("queued write reported %v after its context ended", err)
	}
	if _, err := s.GetSession(context.Background(), "t", "kept"); err != nil {
		t.Errorf("write committed but cannot be read: %v", err)
	}
}

func TestWritePanicIsAnError(t *testing.T) {
	s := mustOpen(t)
	err := s.write(context.Background(), func(context.Context, *sql.Tx) error { panic("bug") })
	if model.AsError(err).Kind != model.KindInternal {
		t.Fatalf("err = %v, want internal", err)
	}
	if _, err := s.CreateSession(context.Background(), "t", model.CreateSession{}); err != nil {
		t.Fatalf("writer unusable after a panic: %v", err)
	}
}

func TestClosedStoreRefusesWrites(t *testing.T) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateSession(context.Background(), "t", model.CreateSession{})
	if model.AsError(err).Kind != model.KindUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
}

func TestTenantsAreIsolated(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, "a", model.CreateSession{ID: "same"}); err != nil {
		t.Fatal(err)
	}
	// The same client id in another tenant is another session, not a conflict that
	// would reveal that tenant a uses it.
	if _, err := s.CreateSession(ctx, "b", model.CreateSession{ID: "same"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, "a", "same", model.AppendRequest{Messages: []model.NewMessage{{Role: "user", Content: model.TextContent("a's")}}}); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListMessages(ctx, "b", "same", model.MessageFilter{}, repo.PageRequest{})
	if err != nil || len(page.Data) != 0 {
		t.Errorf("tenant b sees %d messages of a (%v)", len(page.Data), err)
	}
	if _, err := s.GetSession(ctx, "c", "same"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("tenant c: err = %v, want not found", err)
	}
}
