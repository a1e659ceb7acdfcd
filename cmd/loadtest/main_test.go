package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: the writer,
// the read pool and the servers these tests start must all stop. Run as
// floor-serve, the test binary is the floor, as the tool re-executes itself
// (testSelf).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == floorCmd {
		if err := floorServe(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "floor-serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// testSelf is what the tool's env.self is in a test: this test binary,
// which TestMain runs as the floor.
func testSelf(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}
