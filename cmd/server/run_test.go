package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/migrations"
)

// envOf turns pairs into a getenv function.
func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// runInProcess starts run() on a random port and returns its base URL and a stop
// function that cancels ctx and returns run's error.
func runInProcess(t *testing.T, args []string, getenv func(string) string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := run(ctx, args, getenv, pw, io.Discard)
		pw.CloseWithError(io.EOF)
		errc <- err
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "listening" {
				addr <- line.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		var stopped bool
		stop := func() error {
			if stopped {
				return nil
			}
			stopped = true
			cancel()
			return <-errc
		}
		t.Cleanup(func() { _ = stop() })
		return "http://" + a, stop
	case err := <-errc:
		cancel()
		t.Fatalf("run exited before listening: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("run did not start listening")
	}
	return "", nil
}

func TestRunServesAndStopsCleanly(t *testing.T) {
	db := filepath.Join(t.TempDir(), "nested", "logbook.db")
	base, stop := runInProcess(t, []string{"--addr", "127.0.0.1:0"}, envOf("LOGBOOK_DB", db, "LOGBOOK_LOG_LEVEL", "warn"))

	for i := 0; ; i++ {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if i > 100 {
			t.Fatalf("/healthz never answered 200: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := http.Post(base+"/v1/sessions", "application/json", strings.NewReader(`{"id":"kept"}`))
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", res, err)
	}
	res.Body.Close()
	if err := stop(); err != nil {
		t.Fatalf("run returned %v after cancel, want nil", err)
	}

	// The same file, served again: what was acknowledged is there.
	base, stop = runInProcess(t, []string{"--addr", "127.0.0.1:0", "--db", db}, envOf())
	res, err = http.Get(base + "/v1/sessions/kept")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("after restart: %v %v", res, err)
	}
	res.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"bad_sync", []string{"--sync", "sometimes"}, nil, "sync"},
		{"bad_env_body_limit", nil, []string{"LOGBOOK_MAX_BODY_BYTES", "lots"}, "max-body-bytes"},
		{"negative_wal_bound", []string{"--wal-max-bytes", "-1"}, nil, "wal-max-bytes"},
		{"port_taken_or_bad", []string{"--addr", "256.0.0.1:99999"}, nil, "listen"},
		{"unknown_command", []string{"frobnicate"}, nil, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--db", filepath.Join(t.TempDir(), "l.db")}, tc.args...)
			err := run(context.Background(), args, envOf(tc.env...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	cfg, _, err := parseConfig("logbook", []string{"--addr", ":1"}, envOf("LOGBOOK_ADDR", ":2", "LOGBOOK_SYNC", "NORMAL"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != ":1" || cfg.Sync != "normal" || cfg.DB != "data/logbook.db" || cfg.MaxBodyBytes != 1<<20 {
		t.Errorf("config = %+v", cfg)
	}
}

func TestMigrateCommands(t *testing.T) {
	// Migrate refuses a file that is not there; an empty one is a database with
	// nothing applied yet.
	db := filepath.Join(t.TempDir(), "l.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	migrate := func(cmd string) string {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"--db", db, "migrate", cmd}, envOf(), &out, io.Discard); err != nil {
			t.Fatalf("migrate %s: %v", cmd, err)
		}
		return out.String()
	}
	if out := migrate("status"); !strings.Contains(out, "pending") {
		t.Errorf("status on a new file: %q, want pending", out)
	}
	if out := migrate("up"); !strings.Contains(out, "applied 00001") {
		t.Errorf("up: %q", out)
	}
	if out := migrate("status"); !strings.Contains(out, "applied 20") {
		t.Errorf("status after up: %q", out)
	}
	// Every migration rolls back, newest first, and the schema comes back up.
	files, err := fs.Glob(migrations.SQLite, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	slices.Reverse(files)
	for _, f := range files {
		if out := migrate("down"); !strings.Contains(out, "rolled back "+f[:5]) {
			t.Errorf("down: %q, want %s rolled back", out, f)
		}
	}
	if out := migrate("up"); !strings.Contains(out, "applied "+files[0][:5]) {
		t.Errorf("up again: %q", out)
	}
	var out bytes.Buffer
	err = run(context.Background(), []string{"--db", db, "migrate", "sideways"}, envOf(), &out, io.Discard)
	if err == nil {
		t.Error("migrate sideways succeeded")
	}
}
