package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// FilesReleaseForTest runs releaseFilesPG in a transaction of its own, for the
// external tests (purge and rewind, its callers, are tested on their own).
func FilesReleaseForTest(ctx context.Context, s *Store, tenant, sessionID string, fromSeq int64) error {
	return s.tx(ctx, func(tx pgx.Tx) error { return releaseFilesPG(ctx, tx, tenant, sessionID, fromSeq) })
}

// VectorIndexReadyForTest reports whether the HNSW index for dims is built,
// starting its build when it is not, as a search would.
func VectorIndexReadyForTest(ctx context.Context, s *Store, dims int) bool {
	return s.hnswReady(ctx, dims)
}

// PoolForTest is the store's connection pool, for a test's own SQL.
func PoolForTest(s *Store) interface {
	QueryRow(context.Context, string, ...any) pgx.Row
} {
	return s.pool
}

// URLForTest is the database the store opened.
func URLForTest(s *Store) string { return s.url }

// SetEfSearchForTest sets the least hnsw.ef_search of a search.
func SetEfSearchForTest(ef int) { efSearchMin = ef }

// PGVectorAtLeastForTest is pgvectorAtLeast.
func PGVectorAtLeastForTest(version string, major, minor int) bool {
	return pgvectorAtLeast(version, major, minor)
}

// SessionsPlanForTest is PostgreSQL's plan for the first page of a list of
// the tenant's sessions with f's filters, as ListSessions asks for it.
func SessionsPlanForTest(ctx context.Context, s *Store, tenant string, f model.SessionFilter) (string, error) {
	query, args := listSessionsSQL(tenant, f, repo.Cursor{}, false, 50)
	rows, err := s.pool.Query(ctx, `EXPLAIN `+query, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		plan = append(plan, line)
	}
	return strings.Join(plan, "\n"), rows.Err()
}

// ListSessionsSQLForTest is ListSessions' statement, for the tests of its plan.
var ListSessionsSQLForTest = listSessionsSQL

// PurgedTablesForTest are the tables a purge erases a session's rows from
// besides messages and checkpoints.
var PurgedTablesForTest = purgedTables

// FoldUsageForTest numbers the committed events and folds them into the
// usage rollups, all of them, as the folder does in the background.
func FoldUsageForTest(ctx context.Context, s *Store) error {
	if err := sequenceEventsPG(ctx, s.pool); err != nil {
		return err
	}
	for {
		more, err := s.foldUsagePG(ctx)
		if err != nil || !more {
			return err
		}
	}
}

// UsageQueryForTest is the statement Usage runs for q.
func UsageQueryForTest(tenant string, q model.UsageQuery) (string, []any) {
	return usageQueryPG(tenant, q)
}

// PauseAppendsForTest keeps appends queued, no writer taking them, until the
// returned func is called: a test sees how writers gather what waited.
func PauseAppendsForTest(s *Store) (resume func()) {
	q := &s.appends
	q.mu.Lock()
	q.paused = true
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		q.paused = false
		n := min(len(q.ready), max(1, q.max)-q.writers)
		q.writers += max(n, 0)
		q.mu.Unlock()
		for range n {
			go q.write(s)
		}
	}
}
