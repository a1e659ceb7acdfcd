package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: the writer,
// the read pool and the servers these tests start must all stop.
func TestMain(m *testing.M) {
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
