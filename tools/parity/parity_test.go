package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestParity fails on any operation of openapi.yaml that a client has no
// method for (unless leftOut says why), on methods whose path parameters
// are named differently or that cannot say a query or body field, and when
// clients/PARITY.md is not what `go generate ./tools/parity` writes now.
func TestParity(t *testing.T) {
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	p, err := run(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range p.Problems {
		t.Error(pr)
	}
	got, err := os.ReadFile(filepath.Join(root, tableFile))
	if err != nil {
		t.Fatalf("%v: run go generate ./tools/parity", err)
	}
	if string(got) != render(p) {
		t.Errorf("%s is not what the clients and openapi.yaml make now: run go generate ./tools/parity", tableFile)
	}
}

// TestNames pins the case conversions the table's names rest on.
func TestNames(t *testing.T) {
	for _, c := range []struct{ camel, py, goName string }{
		{"createSession", "create_session", "CreateSession"},
		{"createAPIKey", "create_api_key", "CreateAPIKey"},
		{"getMessageByClientId", "get_message_by_client_id", "GetMessageByClientID"},
		{"listAPIKeys", "list_api_keys", "ListAPIKeys"},
		{"getHealth", "get_health", "GetHealth"},
	} {
		if got := pythonName(c.camel); got != c.py {
			t.Errorf("pythonName(%q) = %q, want %q", c.camel, got, c.py)
		}
		if got := goName(c.camel); got != c.goName {
			t.Errorf("goName(%q) = %q, want %q", c.camel, got, c.goName)
		}
	}
}
