package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

func backupPost(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// openBackup checks that a backup opens, passes integrity_check and holds the
// session "kept" with n messages.
func openBackup(t *testing.T, path string, n int64) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, ReadConns: 1})
	if err != nil {
		t.Fatalf("open backup: %v", err)
	}
	defer st.Close()
	if got, err := st.IntegrityCheck(ctx); err != nil || got != "ok" {
		t.Fatalf("integrity_check of the backup: %q, %v", got, err)
	}
	ses, err := st.GetSession(ctx, model.DefaultTenant, "kept")
	if err != nil || ses.MessageCount != n {
		t.Fatalf("backup holds %+v, %v; want kept with %d messages", ses, err, n)
	}
}

// The CLI and the API both back up the file of a running server.
func TestBackupWhileServing(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "data", "logbook.db")
	dir := filepath.Join(tmp, "snaps")
	base, stop := runInProcess(t, []string{"--db", db, "--addr", "127.0.0.1:0", "--backup-dir", dir}, envOf("LOGBOOK_LOG_LEVEL", "warn"))
	if code, b := backupPost(t, base+"/v1/sessions", `{"id":"kept"}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	for _, c := range []string{"one", "two", "three"} {
		if code, b := backupPost(t, base+"/v1/sessions/kept/messages", `{"role":"user","content":"`+c+`"}`); code != http.StatusCreated {
			t.Fatalf("append: %d %s", code, b)
		}
	}

	dest := filepath.Join(tmp, "cli", "copy.db")
	out, err := runCLI(t, "--db", db, "backup", dest)
	if err != nil || !strings.Contains(out, dest) {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "--db", db, "backup", dest); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second backup to the same path: %v, want a refusal", err)
	}
	if _, err := runCLI(t, "--db", db, "backup"); err == nil || !strings.Contains(err.Error(), "PATH") {
		t.Errorf("backup without a path: %v", err)
	}
	if _, err := runCLI(t, "--db", filepath.Join(tmp, "missing.db"), "backup", filepath.Join(tmp, "x.db")); err == nil {
		t.Error("backup of a missing database succeeded")
	}

	code, b := backupPost(t, base+"/v1/admin/backup", `{"name":"api.db"}`)
	if code != http.StatusCreated {
		t.Fatalf("API backup: %d %s", code, b)
	}
	var got model.Backup
	if err := json.Unmarshal(b, &got); err != nil || got.Path != filepath.Join(dir, "api.db") {
		t.Fatalf("API backup answered %s (%v)", b, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	openBackup(t, dest, 3)
	openBackup(t, got.Path, 3)
	if st, err := os.Stat(dest); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("backup file mode %v (%v), want 0600: it holds every tenant's data", st.Mode(), err)
	}
}

func TestBackupDirConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"default_next_to_db", []string{"--db", "/srv/lb/logbook.db"}, nil, "/srv/lb/backups"},
		{"env", []string{"--db", "/srv/lb/logbook.db"}, []string{"LOGBOOK_BACKUP_DIR", "/b"}, "/b"},
		{"flag_wins", []string{"--backup-dir", "/f"}, []string{"LOGBOOK_BACKUP_DIR", "/b"}, "/f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseConfig("logbook", tc.args, envOf(tc.env...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.BackupDir != tc.want {
				t.Errorf("BackupDir = %q, want %q", cfg.BackupDir, tc.want)
			}
		})
	}
}
