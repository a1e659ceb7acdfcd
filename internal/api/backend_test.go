package api_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// The API tests run against one backend at a time: SQLite by default, and
// PostgreSQL with LOGBOOK_TEST_BACKEND=postgres (make test runs both). Tests
// of what only one backend has (a database file, SQLite's writer) say so with
// requireSQLite.
var onPostgres = os.Getenv("LOGBOOK_TEST_BACKEND") == "postgres"

// requireSQLite skips a test that is about the SQLite backend itself when the
// suite runs on PostgreSQL.
func requireSQLite(t testing.TB, why string) {
	t.Helper()
	if onPostgres {
		t.Skipf("SQLite only (%s)", why)
	}
}

// One throwaway cluster serves the package's tests on PostgreSQL; each server
// gets a database of its own, copied from a migrated template.
var pg = struct {
	once    sync.Once
	cluster *pgtest.Cluster
	err     error
	n       atomic.Int64
	mu      sync.Mutex
	byPath  map[string]string // withDB's path → its database
}{byPath: map[string]string{}}

func stopPostgres() {
	if pg.cluster != nil {
		pg.cluster.Stop()
	}
}

// openPostgres opens a store on a fresh database, or, for a test that names a
// database file (withDB), on the database that stands for that path, so that
// two servers of one test given one path share one database as they would
// share the file.
func openPostgres(t testing.TB, path string, faults *repo.Faults) repo.Store {
	t.Helper()
	pg.once.Do(func() {
		if pg.cluster, pg.err = pgtest.New(); pg.err != nil {
			return
		}
		if pg.err = postgres.Migrate(context.Background(), pg.cluster.URL("template1"), "up", discardWriter{}); pg.err != nil {
			return
		}
		pg.err = preparePGVector(pg.cluster.URL("template1"))
	})
	if errors.Is(pg.err, pgtest.ErrMissing) {
		t.Skipf("LOGBOOK_TEST_BACKEND=postgres, but %v: the PostgreSQL half of this test is skipped", pg.err)
	}
	if pg.err != nil {
		t.Fatalf("LOGBOOK_TEST_BACKEND=postgres: %v", pg.err)
	}
	ctx := context.Background()
	pg.mu.Lock()
	name, known := pg.byPath[path]
	if !known {
		name = fmt.Sprintf("api%d", pg.n.Add(1))
		conn, err := pgx.Connect(ctx, pg.cluster.URL("postgres"))
		if err == nil {
			_, err = conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template1")
			conn.Close(ctx)
		}
		if err != nil {
			pg.mu.Unlock()
			t.Fatal(err)
		}
		if path != "" {
			pg.byPath[path] = name
		}
	}
	pg.mu.Unlock()
	st, err := postgres.Open(ctx, postgres.Config{URL: pg.cluster.URL(name), Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// preparePGVector sets pgvector up in the template, as the first Open of a
// real database does, so that each test's copy has it and its Open only
// checks. Where the server has no pgvector, searches use the in-memory path.
func preparePGVector(url string) error {
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		return err
	}
	return st.Close()
}
