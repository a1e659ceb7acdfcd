package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// seed makes a session with messages and a checkpoint in a database file.
func seed(t *testing.T, db, tenant string) model.Session {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: db, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	title := "moved between databases"
	ses, err := st.CreateSession(ctx, tenant, model.CreateSession{Title: &title, Metadata: model.Object(`{"k":7}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.AppendMessages(ctx, tenant, ses.ID, model.AppendRequest{Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.TextContent("hello"), Tokens: 2, Cost: 0.01},
		{Role: model.RoleAssistant, Content: model.TextContent(""), ToolCalls: []model.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutCheckpoint(ctx, tenant, ses.ID, model.PutCheckpoint{Iteration: 1, State: model.JSON(`{"n":1}`)}, model.CheckpointRetention{}); err != nil {
		t.Fatal(err)
	}
	if ses, err = st.GetSession(ctx, tenant, ses.ID); err != nil {
		t.Fatal(err)
	}
	return ses
}

func TestExportImportCommands(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	ses := seed(t, src, "acme")

	export, err := runCLI(t, "--db", src, "export", "--tenant", "acme", ses.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(export, "\n"); n != 1+2+1+1 {
		t.Fatalf("export has %d lines:\n%s", n, export)
	}
	file := filepath.Join(dir, "session.ndjson")
	if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}

	// dst does not exist yet: restoring onto a fresh file takes --create.
	out, err := runCLI(t, "--db", dst, "import", "--create", "--tenant", "acme", "--file", file)
	if err != nil || strings.TrimSpace(out) != ses.ID {
		t.Fatalf("import: %v, printed %q, want %s", err, out, ses.ID)
	}
	again, err := runCLI(t, "--db", dst, "export", "--tenant", "acme", ses.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again != export {
		t.Fatalf("export → import → export changed the bytes:\n%s\n%s", export, again)
	}

	// From stdin, as `logbook import < file` does; the id exists now.
	withStdin(t, file)
	if _, err := runCLI(t, "--db", dst, "import", "--tenant", "acme"); err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("importing an existing session: %v, want a conflict", err)
	}
	withStdin(t, file)
	out, err = runCLI(t, "--db", dst, "import", "--tenant", "acme", "--as-new")
	if id := strings.TrimSpace(out); err != nil || id == ses.ID || !strings.HasPrefix(id, model.PrefixSession) {
		t.Fatalf("import --as-new: %v, printed %q", err, out)
	}

	// Another tenant does not see it; a bad file is refused.
	if _, err := runCLI(t, "--db", dst, "export", ses.ID); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Errorf("export from the default tenant: %v, want not found", err)
	}
	cut := filepath.Join(dir, "cut.ndjson")
	if err := os.WriteFile(cut, []byte(export[:len(export)/2]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, "--db", dst, "import", "--as-new", "--file", cut); err == nil || !strings.Contains(err.Error(), "invalid_import") {
		t.Errorf("a truncated file: %v, want invalid_import", err)
	}
	for _, bad := range [][]string{{"export"}, {"export", "a", "b"}, {"import", "extra"}, {"export", "--tenant", "bad tenant", "x"}} {
		if _, err := runCLI(t, append([]string{"--db", dst}, bad...)...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// withStdin points os.Stdin at a file for the rest of the test.
func withStdin(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	t.Cleanup(func() {
		os.Stdin = old
		f.Close()
	})
}

func TestImportMaxBytesConfig(t *testing.T) {
	c, _, err := parseConfig("logbook", nil, envOf(), io.Discard)
	if err != nil || c.ImportMaxBytes != 256<<20 {
		t.Fatalf("default: %d, %v", c.ImportMaxBytes, err)
	}
	c, _, err = parseConfig("logbook", []string{"--import-max-bytes", "1000"}, envOf("LOGBOOK_IMPORT_MAX_BYTES", "5"), io.Discard)
	if err != nil || c.ImportMaxBytes != 1000 {
		t.Fatalf("flag over env: %d, %v", c.ImportMaxBytes, err)
	}
	c, _, err = parseConfig("logbook", nil, envOf("LOGBOOK_IMPORT_MAX_BYTES", "5"), io.Discard)
	if err != nil || c.ImportMaxBytes != 5 {
		t.Fatalf("env: %d, %v", c.ImportMaxBytes, err)
	}
	if _, _, err := parseConfig("logbook", []string{"--import-max-bytes", "0"}, envOf(), io.Discard); err == nil {
		t.Error("--import-max-bytes 0 accepted")
	}
}
