package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// One cluster serves the package's tests; each test gets a database of its
// own, copied from a migrated template (far faster than migrating each).
var (
	cluster   *pgtest.Cluster
	missing   error
	databases atomic.Int64
)

func TestMain(m *testing.M) {
	var err error
	cluster, err = pgtest.New()
	if errors.Is(err, pgtest.ErrMissing) {
		missing = err
		os.Exit(m.Run()) // each test skips, saying why
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "start PostgreSQL:", err)
		os.Exit(1)
	}
	if err := postgres.Migrate(context.Background(), templateURL(), "up", io.Discard); err != nil {
		cluster.Stop()
		fmt.Fprintln(os.Stderr, "migrate the template:", err)
		os.Exit(1)
	}
	// pgvector set up in the template, as the first Open of a real database
	// does, so that each test's copy has it and its Open only checks.
	if st, err := postgres.Open(context.Background(), postgres.Config{URL: templateURL()}); err != nil {
		cluster.Stop()
		fmt.Fprintln(os.Stderr, "open the template:", err)
		os.Exit(1)
	} else {
		st.Close()
	}
	code := m.Run()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop PostgreSQL:", err)
	}
	os.Exit(code)
}

func templateURL() string { return cluster.URL("template1") }

// mustDatabase makes a fresh, migrated database for t and returns its URL.
func mustDatabase(t testing.TB) string {
	t.Helper()
	if missing != nil {
		t.Skipf("%v: the PostgreSQL half of this test is skipped", missing)
	}
	name := fmt.Sprintf("t%d", databases.Add(1))
	conn, err := pgx.Connect(context.Background(), cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+name+" TEMPLATE template1"); err != nil {
		t.Fatal(err)
	}
	return cluster.URL(name)
}

// mustOpen opens a store on a fresh database.
func mustOpen(t testing.TB) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{URL: mustDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// mustOpenURL opens a store on the database at url (a second process's view
// when called twice).
func mustOpenURL(t testing.TB, url string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
