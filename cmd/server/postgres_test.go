package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// --db postgres://… serves the same API from PostgreSQL: migrations at start,
// the commands that work on the database (migrate, keys, export, import,
// agents export and import, backup with pg_dump), and two server processes on
// one database at once.
func TestServeOnPostgres(t *testing.T) {
	cluster := pgtest.Start(t)
	url := cluster.URL("postgres")
	env := envOf("LOGBOOK_DB", url, "LOGBOOK_LOG_LEVEL", "warn")
	a, stopA := runInProcess(t, []string{"--addr", "127.0.0.1:0"}, env)
	b, stopB := runInProcess(t, []string{"--addr", "127.0.0.1:0"}, env)

	post := func(base, path, body string) (int, []byte) {
		t.Helper()
		res, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, out
	}
	if code, body := post(a, "/v1/sessions", `{"id": "pg-1"}`); code != http.StatusCreated {
		t.Fatalf("create on A: %d %s", code, body)
	}
	// Appends through both processes land in one gap-free order.
	for i, base := range []string{a, b, a, b} {
		code, body := post(base, "/v1/sessions/pg-1/messages", `{"role": "user", "content": "hello", "idempotency_key": "k`+string(rune('0'+i))+`"}`)
		var m struct{ Seq int64 }
		if code != http.StatusCreated || json.Unmarshal(body, &m) != nil || m.Seq != int64(i+1) {
			t.Fatalf("append %d: %d %s", i, code, body)
		}
	}
	// An agent with a passage, for the agents commands below.
	if code, out := post(a, "/v1/agents", `{"id": "pg-bot", "name": "Bot"}`); code != http.StatusCreated {
		t.Fatalf("agent: %d %s", code, out)
	}
	if code, out := post(b, "/v1/agents/pg-bot/archival", `{"content": "Ann likes ramen"}`); code != http.StatusCreated {
		t.Fatalf("passage: %d %s", code, out)
	}
	res, err := http.Get(b + "/v1/sessions/pg-1")
	if err != nil {
		t.Fatal(err)
	}
	var ses struct {
		LastSeq int64 `json:"last_seq"`
	}
	json.NewDecoder(res.Body).Decode(&ses)
	res.Body.Close()
	if ses.LastSeq != 4 {
		t.Errorf("last_seq %d from B, want 4", ses.LastSeq)
	}
	if err := stopA(); err != nil {
		t.Errorf("stop A: %v", err)
	}
	if err := stopB(); err != nil {
		t.Errorf("stop B: %v", err)
	}

	dir := t.TempDir()
	cli := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := run(context.Background(), append(args, "--db", url), envOf(), &out, &errb); err != nil {
			t.Fatalf("%v: %v: %s", args, err, errb.String())
		}
		return out.String()
	}
	if out := cli("migrate", "status"); !strings.Contains(out, "00001_schema.sql") {
		t.Errorf("migrate status: %s", out)
	}
	if out := cli("keys", "create", "--tenant", "ops", "--scope", "admin"); !strings.Contains(out, "lb_") {
		t.Errorf("keys create: %s", out)
	}
	if out := cli("export", "pg-1"); !strings.Contains(out, `"type":"end"`) || strings.Count(out, `"type":"message"`) != 4 {
		t.Errorf("export: %.300s", out)
	}
	// agents export and import work on PostgreSQL as on a file: the copy
	// under a new id has the passage.
	agent := cli("agents", "export", "pg-bot")
	if !strings.Contains(agent, `"Ann likes ramen"`) || !strings.Contains(agent, `"type":"agent_end"`) {
		t.Errorf("agents export: %.300s", agent)
	}
	file := filepath.Join(dir, "pg-bot.ndjson")
	if err := os.WriteFile(file, []byte(agent), 0o600); err != nil {
		t.Fatal(err)
	}
	copyID := strings.TrimSpace(cli("agents", "import", "--as-new", file))
	if copyID == "" || copyID == "pg-bot" {
		t.Fatalf("agents import --as-new printed %q", copyID)
	}
	if out := cli("agents", "export", copyID); !strings.Contains(out, `"Ann likes ramen"`) {
		t.Errorf("the imported agent %s lacks the passage: %.300s", copyID, out)
	}
	backup := filepath.Join(dir, "logbook.dump")
	if out := cli("backup", backup); !strings.Contains(out, "pg_dump") {
		t.Errorf("backup: %s", out)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Size() == 0 {
		t.Errorf("backup file: %v", err)
	}
}
