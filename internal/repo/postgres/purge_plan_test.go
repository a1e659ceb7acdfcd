package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/repo/postgres"
)

// A purge erases a session's rows from every table that holds them, a
// session at a time: each delete must have an index that leads with
// (tenant_id, session_id) to read, or a purge of 10% of a tenant's sessions
// reads the tenant's rows once per session it erases. The catalog says
// whether there is one; a plan over the test's empty tables would not.
func TestPurgeDeletesReadTheSessionsRowsOnlyPG(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, mustDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, table := range append([]string{"messages", "checkpoints"}, postgres.PurgedTablesForTest...) {
		var n int
		if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM pg_index i
			JOIN pg_attribute a0 ON a0.attrelid = i.indrelid AND a0.attnum = i.indkey[0]
			JOIN pg_attribute a1 ON a1.attrelid = i.indrelid AND a1.attnum = i.indkey[1]
			WHERE i.indrelid = $1::regclass AND i.indpred IS NULL
				AND a0.attname = 'tenant_id' AND a1.attname = 'session_id'`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("%s has no index that leads with (tenant_id, session_id)", table)
		}
	}
}
