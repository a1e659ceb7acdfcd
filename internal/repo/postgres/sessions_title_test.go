package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// TestTitleFilterUsesTheTrigramIndex: the list's title filter is spelt as
// the migration's index is, so a rare text among many titles is answered by
// the index instead of a walk of the tenant's sessions.
func TestTitleFilterUsesTheTrigramIndex(t *testing.T) {
	st := mustOpen(t)
	ctx := context.Background()
	var n int
	if err := postgres.PoolForTest(st).QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'sessions_by_title'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("index sessions_by_title: %d, %v (the test cluster has pg_trgm: the migration must create it)", n, err)
	}
	if err := postgres.PoolForTest(st).QueryRow(ctx, `WITH made AS (
		INSERT INTO sessions (tenant_id, id, title, status, created_at, updated_at)
		SELECT 't', 's' || i, 'Session number ' || i || ' about the weather', 'created', i, i FROM generate_series(1, 20000) i
		RETURNING 1) SELECT count(*) FROM made`).Scan(&n); err != nil || n != 20000 {
		t.Fatalf("insert: %d, %v", n, err)
	}
	// As autovacuum would: GIN's pending list merged into the index proper.
	if err := postgres.PoolForTest(st).QueryRow(ctx, `SELECT gin_clean_pending_list('sessions_by_title')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := postgres.PoolForTest(st).QueryRow(ctx, `ANALYZE sessions`).Scan(); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	plan, err := postgres.SessionsPlanForTest(ctx, st, "t", model.SessionFilter{Title: "ZEBRA"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "sessions_by_title") {
		t.Errorf("a rare text is not looked up in the trigram index:\n%s", plan)
	}
	t.Logf("plan:\n%s", plan)
}
