package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// Each session list is one range of an index in the list's order, whatever
// the tenant holds: a metadata filter reads session_meta's rows of its key and
// value, and a deep page is bounded by its cursor. The plans must not sort.
func TestSessionListsReadAnIndexRangePG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Enough sessions, and statistics, for the planner to weigh an index
	// against the table as it would on a large one.
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (tenant_id, id, status, metadata, created_at, updated_at)
		SELECT 't', 'ses_' || n, 'active', json_build_object('customer', 'c' || (n % 500), 'tier', 'gold'), n, n
		FROM generate_series(1, 5000) n`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	at := func(ms int64) *model.Time { v := model.Time(ms); return &v }
	cur := repo.Cursor{N: 1 << 50, S: "ses_x"}
	for _, tc := range []struct {
		name   string
		f      model.SessionFilter
		cursor bool
		want   []string
	}{
		{"metadata, deep page", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "customer", Value: "c1"}}}, true,
			[]string{"Scan Backward using session_meta_pkey", "ROW(created_at, session_id) < ROW(", "Index Scan using sessions_pkey on sessions s", "AND (id = (k.session_id)::text))"}},
		{"metadata and a created range", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "tier", Value: "gold"}},
			CreatedAfter: at(1), CreatedBefore: at(1 << 52)}, false,
			[]string{"Scan Backward using session_meta_pkey", "(created_at > ", "(created_at < ", "Index Scan using sessions_pkey on sessions s", "AND (id = (k.session_id)::text))"}},
		{"created range, deep page", model.SessionFilter{CreatedAfter: at(1), CreatedBefore: at(1 << 52)}, true,
			[]string{"Index Scan Backward using sessions_by_created", "ROW(created_at, (id)::text) < ROW("}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			query, args := postgres.ListSessionsSQLForTest("t", tc.f, cur, tc.cursor, 10)
			rows, err := conn.Query(ctx, "EXPLAIN "+query, args...)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for rows.Next() {
				var l string
				if err := rows.Scan(&l); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, l)
			}
			rows.Close()
			plan := strings.Join(lines, "\n")
			for _, w := range tc.want {
				if !strings.Contains(plan, w) {
					t.Errorf("plan lacks %q:\n%s", w, plan)
				}
			}
			if strings.Contains(plan, "Sort") {
				t.Errorf("plan sorts:\n%s", plan)
			}
		})
	}
}
