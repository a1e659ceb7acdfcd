package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// seedAgent makes an agent with a block, a passage with its embedding and a
// session in a database file.
func seedAgent(t *testing.T, db, tenant string) model.Agent {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: db, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.CreateAgent(ctx, tenant, model.CreateAgent{ID: "support-bot", Name: "Support bot"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.PutBlock(ctx, tenant, a.ID, "human", model.PutBlock{Value: "Name: Ann"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreatePassage(ctx, tenant, a.ID, model.CreatePassage{Content: "Ann likes ramen",
		Embedding: []float32{0.25, -1, 3}, EmbeddingModel: "m"}); err != nil {
		t.Fatal(err)
	}
	ses, err := st.CreateSession(ctx, tenant, model.CreateSession{AgentID: &a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMessages(ctx, tenant, ses.ID, model.AppendRequest{Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.TextContent("hello")},
	}}); err != nil {
		t.Fatal(err)
	}
	return a
}

// The CLI moves an agent as GET /v1/agents/{id}/export and POST
// /v1/agents/import do: export → import → export is the same bytes.
func TestAgentExportImportCommands(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	a := seedAgent(t, src, "acme")

	export, err := runCLI(t, "--db", src, "agents", "export", "--tenant", "acme", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"format":"logbook.agent"`, `"Name: Ann"`, `"Ann likes ramen"`, `"hello"`, `"type":"agent_end"`} {
		if !strings.Contains(export, want) {
			t.Fatalf("the export lacks %s:\n%s", want, export)
		}
	}
	file := filepath.Join(dir, "agent.ndjson")
	if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}

	// FILE as the argument; dst does not exist yet, so it takes --create.
	out, err := runCLI(t, "--db", dst, "agents", "import", "--create", "--tenant", "acme", file)
	if err != nil || strings.TrimSpace(out) != a.ID {
		t.Fatalf("agents import FILE: %v, printed %q, want %s", err, out, a.ID)
	}
	again, err := runCLI(t, "--db", dst, "agents", "export", "--tenant", "acme", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again != export {
		t.Fatalf("export → import → export changed the bytes:\n%s\n%s", export, again)
	}

	// From stdin, and with --file: the id is taken now, so as new.
	withStdin(t, file)
	if _, err := runCLI(t, "--db", dst, "agents", "import", "--tenant", "acme"); err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("importing an existing agent: %v, want a conflict", err)
	}
	withStdin(t, file)
	out, err = runCLI(t, "--db", dst, "agents", "import", "--tenant", "acme", "--as-new")
	if id := strings.TrimSpace(out); err != nil || id == a.ID || id == "" {
		t.Fatalf("agents import --as-new from stdin: %v, printed %q", err, out)
	}
	if out, err := runCLI(t, "--db", dst, "agents", "import", "--tenant", "acme", "--as-new", "--file", file); err != nil || strings.TrimSpace(out) == a.ID {
		t.Fatalf("agents import --file: %v, printed %q", err, out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agents", "export"}, "needs AGENT_ID"},
		{[]string{"agents", "export", "a", "b"}, "arguments"},
		{[]string{"agents", "export", a.ID}, "not_found"}, // the default tenant has none
		{[]string{"agents", "export", "--tenant", "bad tenant", a.ID}, "--tenant"},
		{[]string{"agents", "import", file, file}, "arguments"},
		{[]string{"agents", "import", "--file", file, file}, "not both"},
		{[]string{"agents", "import", filepath.Join(dir, "missing.ndjson")}, "no such file"},
		{[]string{"agents"}, "export or import"},
		{[]string{"agents", "frob"}, `unknown command "frob"`},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			out, err := runCLI(t, append([]string{"--db", dst}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
		})
	}
}
