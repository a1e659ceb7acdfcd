package main

import (
	"fmt"
	"os"
	"strings"
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

// make build writes bin/logbook, so the tool finds it there without -server;
// an empty -server still says what it wants.
func TestServerFlagDefaultsToTheBuiltBinary(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil || o.server != "bin/logbook" {
		t.Errorf("parseFlags(nil): server %q (%v), want bin/logbook", o.server, err)
	}
	if _, err := parseFlags([]string{"-server", ""}); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("-server '': %v, want an error that says to run make build", err)
	}
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
