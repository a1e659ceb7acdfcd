package api_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: the writer,
// the read pool and the servers these tests start must all stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { stopPostgres() }),
		// pgxpool's background health check ends with the pool, but may be
		// caught between two ticks when the last test's Close returns.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"))
}
