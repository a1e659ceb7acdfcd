package sqlite

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: the writer,
// the read pool and the servers these tests start must all stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
