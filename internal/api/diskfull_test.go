package api_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// TestDiskFull fills a real, small file system through the API: writes must fail
// cleanly (503 storage_unavailable, nothing half-written), reads must go on, the
// file must stay sound, and writes must succeed again once space returns.
func TestDiskFull(t *testing.T) {
	requireSQLite(t, "it fills the file system under the database file")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root and mount rights): %v %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	// Ballast holds space that the test frees later, as an operator would: enough
	// for the writer to catch up on its search index and checkpoint the WAL.
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}

	c := newClient(t, withDB(filepath.Join(dir, "logbook.db")))
	s := mustCreateSession(t, c, nil)
	path := "/v1/sessions/" + s.ID + "/messages"
	big := strings.Repeat("x", 16<<10)
	acked := 0
	var full *response
	for i := 0; i < 1000 && full == nil; i++ {
		res := c.do("POST", path, map[string]any{"role": "user", "content": big})
		switch res.Status {
		case http.StatusCreated:
			acked++
		default:
			full = res
		}
	}
	if full == nil {
		t.Fatal("1000 appends of 16 KiB fit in a 6 MiB file system")
	}
	full.wantProblem(t, http.StatusServiceUnavailable, "storage_unavailable")
	t.Logf("file system full after %d acknowledged appends", acked)

	// Reads still work and show exactly what was acknowledged.
	got := mustGetSession(t, c, s.ID)
	if got.MessageCount != int64(acked) || got.LastSeq != int64(acked) {
		t.Fatalf("after disk full: %d messages, last_seq %d; %d were acknowledged", got.MessageCount, got.LastSeq, acked)
	}
	c.do("GET", path+"?order=desc&limit=5", nil).want(t, http.StatusOK, nil)
	if res, err := c.store.IntegrityCheck(t.Context()); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q %v", res, err)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	var m model.Message
	c.do("POST", path, map[string]any{"role": "user", "content": "space is back"}).want(t, http.StatusCreated, &m)
	if m.Seq != int64(acked+1) {
		t.Errorf("first append after space returned got seq %d, want %d", m.Seq, acked+1)
	}
}
