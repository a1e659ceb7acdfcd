package api_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// withBackupDir sets where POST /v1/admin/backup writes.
func withBackupDir(dir string) testServerOption { return func(c *testConfig) { c.api.BackupDir = dir } }

// adminClients makes a write and an admin key of one tenant.
func adminClients(t *testing.T, c *client) (write, admin *client) {
	t.Helper()
	return adminClientsOf(t, c, "t")
}

func adminClientsOf(t *testing.T, c *client, tenant string) (write, admin *client) {
	t.Helper()
	return c.as(mustKey(t, c, tenant, model.ScopeWrite).Key), c.as(mustKey(t, c, tenant, model.ScopeAdmin).Key)
}

func TestPurgeSessionOverHTTP(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	w, admin := adminClients(t, c)
	ses := mustCreateSession(t, w, map[string]any{"id": "doomed"})
	mustAppend(t, w, ses.ID, userMsg("zebra one"), "Idempotency-Key", "k1")
	mustAppend(t, w, ses.ID, userMsg("zebra two"))
	w.do("PUT", "/v1/sessions/doomed/checkpoint", map[string]any{"iteration": 1, "state": map[string]any{}}).want(t, http.StatusCreated, nil)

	t.Run("read_scope_is_403_other_users_key_404", func(t *testing.T) {
		c.as(mustKey(t, c, "t", model.ScopeRead).Key).do("DELETE", "/v1/sessions/doomed?purge=true", nil).
			wantProblem(t, http.StatusForbidden, "forbidden")
		var bound model.NewAPIKey
		admin.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "user_id": "someone"}).want(t, http.StatusCreated, &bound)
		c.as(bound.Key).do("DELETE", "/v1/sessions/doomed?purge=true", nil).wantProblem(t, http.StatusNotFound, "not_found")
		if got := mustGetSession(t, w, "doomed"); got.MessageCount != 2 || got.Status != model.StatusActive {
			t.Fatalf("a refused purge changed the session: %+v", got)
		}
	})
	t.Run("bad_query_is_400", func(t *testing.T) {
		admin.do("DELETE", "/v1/sessions/doomed?purge=yes", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
		admin.do("DELETE", "/v1/sessions/doomed?purg=true", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
	})
	t.Run("purge_false_is_the_soft_close", func(t *testing.T) {
		other := mustCreateSession(t, w, nil)
		var closed model.Session
		w.do("DELETE", "/v1/sessions/"+other.ID+"?purge=false", nil).want(t, http.StatusOK, &closed)
		if closed.Status != model.StatusCompleted {
			t.Errorf("soft close: %+v", closed)
		}
	})

	// A write key purges a session it can see, as the admin purge does: a
	// runtime deleting its thread.
	res := w.do("DELETE", "/v1/sessions/doomed?purge=true", nil).want(t, http.StatusNoContent, nil)
	if len(res.Body) != 0 {
		t.Errorf("204 with a body: %s", res.Body)
	}
	w.do("GET", "/v1/sessions/doomed", nil).wantProblem(t, http.StatusNotFound, "not_found")
	w.do("GET", "/v1/sessions/doomed/messages", nil).wantProblem(t, http.StatusNotFound, "not_found")
	w.do("GET", "/v1/sessions/doomed/checkpoint", nil).wantProblem(t, http.StatusNotFound, "not_found")
	admin.do("DELETE", "/v1/sessions/doomed?purge=true", nil).wantProblem(t, http.StatusNotFound, "not_found")
	waitSearchable(t, w)
	var hits struct{ Data []model.MessageHit }
	w.do("GET", "/v1/messages/search?q=zebra", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 0 {
		t.Errorf("search still finds the purged messages: %+v", hits.Data)
	}
	// The id and its idempotency key are free again.
	mustCreateSession(t, w, map[string]any{"id": "doomed"})
	if m := mustAppend(t, w, "doomed", userMsg("fresh"), "Idempotency-Key", "k1"); m.Seq != 1 || m.Content.Text != "fresh" {
		t.Errorf("append after purge: %+v", m)
	}
	var rep model.IntegrityReport
	admin.do("GET", "/v1/admin/integrity", nil).want(t, http.StatusOK, &rep)
	if !rep.OK {
		t.Errorf("integrity after the purge: %+v", rep)
	}
}

// blankIDs drops the ids of messages at or below seq: a fork's copied prefix has
// new ids; everything else reads the same.
func blankIDs(ms []model.Message, upto int64) []model.Message {
	out := make([]model.Message, len(ms))
	for i, m := range ms {
		if m.Seq <= upto {
			m.ID = ""
		}
		out[i] = m
	}
	return out
}

func TestPurgeParentKeepsForksOverHTTP(t *testing.T) {
	c := newClient(t)
	parent := mustCreateSession(t, c, map[string]any{"id": "parent"})
	for _, w := range []string{"apple", "banana", "cherry", "damson"} {
		mustAppend(t, c, parent.ID, userMsg(w+" from the parent"))
	}
	c.do("POST", "/v1/sessions/parent/fork", map[string]any{"id": "fork", "at_seq": 3}).want(t, http.StatusCreated, nil)
	mustAppend(t, c, "fork", userMsg("elderberry in the fork"))
	c.do("POST", "/v1/sessions/fork/fork", map[string]any{"id": "forkfork", "at_seq": 4}).want(t, http.StatusCreated, nil)
	mustAppend(t, c, "forkfork", userMsg("fig in the fork of the fork"))
	waitSearchable(t, c)

	before := map[string][]model.Message{}
	sessions := map[string]model.Session{}
	for _, id := range []string{"fork", "forkfork"} {
		before[id] = listAll[model.Message](t, c, "/v1/sessions/"+id+"/messages", 2)
		sessions[id] = mustGetSession(t, c, id)
	}
	c.do("DELETE", "/v1/sessions/parent?purge=true", nil).want(t, http.StatusNoContent, nil)
	c.do("GET", "/v1/sessions/parent", nil).wantProblem(t, http.StatusNotFound, "not_found")

	for _, id := range []string{"fork", "forkfork"} {
		after := listAll[model.Message](t, c, "/v1/sessions/"+id+"/messages", 2)
		if !reflect.DeepEqual(blankIDs(after, 3), blankIDs(before[id], 3)) {
			t.Errorf("%s reads differently after the purge:\ngot  %+v\nwant %+v", id, after, before[id])
		}
		if got := mustGetSession(t, c, id); !reflect.DeepEqual(got, sessions[id]) {
			t.Errorf("%s changed:\ngot  %+v\nwant %+v", id, got, sessions[id])
		}
		// One message reads the same by its (new) id.
		var m model.Message
		c.do("GET", "/v1/sessions/"+id+"/messages/"+after[0].ID, nil).want(t, http.StatusOK, &m)
		if m.Content.Text != "apple from the parent" || m.SessionID != id {
			t.Errorf("get by id on %s: %+v", id, m)
		}
	}
	waitSearchable(t, c)
	for _, tc := range []struct{ session, word string }{
		{"fork", "apple"}, {"fork", "cherry"}, {"fork", "elderberry"},
		{"forkfork", "banana"}, {"forkfork", "elderberry"}, {"forkfork", "fig"},
	} {
		var hits struct{ Data []model.MessageHit }
		c.do("GET", "/v1/messages/search?q="+tc.word+"&session_id="+tc.session, nil).want(t, http.StatusOK, &hits)
		if len(hits.Data) != 1 || hits.Data[0].SessionID != tc.session {
			t.Errorf("search %q in %s: %+v, want one hit", tc.word, tc.session, hits.Data)
		}
	}
	var hits struct{ Data []model.MessageHit }
	c.do("GET", "/v1/messages/search?q=damson", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 0 {
		t.Errorf("the parent's own last message (never shared) is still found: %+v", hits.Data)
	}
}

func TestBulkPurgeOverHTTP(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	w, admin := adminClients(t, c)
	const n = 57
	for i := range n {
		ses := mustCreateSession(t, w, map[string]any{"id": fmt.Sprintf("old-%02d", i)})
		mustAppend(t, w, ses.ID, userMsg("a"))
		mustAppend(t, w, ses.ID, userMsg("b"))
		if i%5 == 0 {
			w.do("PUT", "/v1/sessions/"+ses.ID+"/checkpoint", map[string]any{"iteration": 1, "state": map[string]any{}}).want(t, http.StatusCreated, nil)
		}
		w.do("DELETE", "/v1/sessions/"+ses.ID, nil).want(t, http.StatusOK, nil)
	}
	active := mustCreateSession(t, w, map[string]any{"id": "still-active"})
	mustAppend(t, w, active.ID, userMsg("c"))
	// A live fork of a purged session keeps its history.
	w.do("POST", "/v1/sessions/old-00/fork", map[string]any{"id": "live-fork"}).want(t, http.StatusCreated, nil)
	liveFork := listAll[model.Message](t, w, "/v1/sessions/live-fork/messages", 50)

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := map[string]any{"status": "completed", "older_than": later, "dry_run": true}

	t.Run("validation", func(t *testing.T) {
		w.do("POST", "/v1/admin/purge", body).wantProblem(t, http.StatusForbidden, "forbidden")
		p := admin.do("POST", "/v1/admin/purge", map[string]any{"older_than": later}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "status" {
			t.Errorf("missing status: %+v", p.Errors)
		}
		p = admin.do("POST", "/v1/admin/purge", map[string]any{"status": "completed", "older_than": "last week"}).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "older_than" {
			t.Errorf("bad older_than: %+v", p.Errors)
		}
		admin.do("POST", "/v1/admin/purge", map[string]any{"status": "gone", "older_than": later}).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		admin.do("POST", "/v1/admin/purge", map[string]any{"status": "completed"}).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		admin.do("POST", "/v1/admin/purge", map[string]any{"status": "completed", "older_than": later, "force": true}).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	})

	var dry, done model.PurgeResult
	admin.do("POST", "/v1/admin/purge", body).want(t, http.StatusOK, &dry)
	if want := (model.PurgeResult{DryRun: true, Sessions: n, Messages: 2 * n, Checkpoints: (n + 4) / 5}); dry != want {
		t.Fatalf("dry run: got %+v, want %+v", dry, want)
	}
	if got := listAll[model.Session](t, w, "/v1/sessions?status=completed", 200); len(got) != n {
		t.Fatalf("the dry run erased something: %d completed sessions left", len(got))
	}
	body["dry_run"] = false
	admin.do("POST", "/v1/admin/purge", body).want(t, http.StatusOK, &done)
	if dry.DryRun = false; done != dry {
		t.Errorf("real run: got %+v, want the dry run's counts %+v", done, dry)
	}
	if got := listAll[model.Session](t, w, "/v1/sessions?status=completed", 200); len(got) != 0 {
		t.Errorf("%d completed sessions survived the purge", len(got))
	}
	mustGetSession(t, w, "still-active")
	if got := listAll[model.Session](t, w, "/v1/sessions", 200); len(got) != 2 {
		t.Errorf("%d sessions left, want still-active and live-fork", len(got))
	}
	if got := listAll[model.Message](t, w, "/v1/sessions/live-fork/messages", 50); !reflect.DeepEqual(blankIDs(got, 2), blankIDs(liveFork, 2)) {
		t.Errorf("live fork after the purge:\ngot  %+v\nwant %+v", got, liveFork)
	}
	var again model.PurgeResult
	admin.do("POST", "/v1/admin/purge", body).want(t, http.StatusOK, &again)
	if again.Sessions != 0 {
		t.Errorf("second purge: %+v", again)
	}
}

func TestIntegrityOverHTTP(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	w, admin := adminClients(t, c)
	ses := mustCreateSession(t, w, nil)
	mustAppend(t, w, ses.ID, userMsg("one"))
	w.do("POST", "/v1/sessions/"+ses.ID+"/fork", map[string]any{}).want(t, http.StatusCreated, nil)
	waitSearchable(t, w)

	w.do("GET", "/v1/admin/integrity", nil).wantProblem(t, http.StatusForbidden, "forbidden")
	admin.do("GET", "/v1/admin/integrity?repair=everything", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
	for _, q := range []string{"", "?repair=counters"} {
		var rep model.IntegrityReport
		admin.do("GET", "/v1/admin/integrity"+q, nil).want(t, http.StatusOK, &rep)
		want := model.IntegrityReport{OK: true, IntegrityCheck: "ok", CounterDrift: []model.CounterDrift{},
			IndexDrift: []model.IndexDrift{}, Repaired: []model.CounterDrift{}}
		if !reflect.DeepEqual(rep, want) {
			t.Errorf("integrity%s: got %+v, want %+v", q, rep, want)
		}
	}
}

func TestBackupOverHTTP(t *testing.T) {
	requireSQLite(t, "a backup copies the database file; PostgreSQL's is pg_dump's: TestBackupOnPostgresNamesPgDump")
	dir := filepath.Join(t.TempDir(), "snapshots")
	c := newClient(t, withoutOpenMode(), withBackupDir(dir))
	w, admin := adminClientsOf(t, c, model.DefaultTenant)
	// Another tenant's admin may not copy everyone's data.
	_, otherAdmin := adminClients(t, c)
	otherAdmin.do("POST", "/v1/admin/backup", map[string]any{}).wantProblem(t, http.StatusForbidden, "forbidden")
	ses := mustCreateSession(t, w, map[string]any{"id": "kept", "title": "in the backup"})
	mustAppend(t, w, ses.ID, userMsg("one"))
	mustAppend(t, w, ses.ID, userMsg("two"))

	w.do("POST", "/v1/admin/backup", map[string]any{}).wantProblem(t, http.StatusForbidden, "forbidden")
	for _, bad := range []string{"../escape.db", "a/b.db", ".", "..", "x y", "name:colon"} {
		body := map[string]any{"name": bad}
		p := admin.do("POST", "/v1/admin/backup", body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "name" {
			t.Errorf("name %q: %+v", bad, p.Errors)
		}
	}
	admin.do("POST", "/v1/admin/backup", map[string]any{"path": "/tmp/x.db"}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")

	var b model.Backup
	admin.do("POST", "/v1/admin/backup", map[string]any{"name": "snap.db"}).want(t, http.StatusCreated, &b)
	if b.Path != filepath.Join(dir, "snap.db") || b.Bytes <= 0 {
		t.Errorf("backup %+v", b)
	}
	if st, err := os.Stat(b.Path); err != nil || st.Size() != b.Bytes {
		t.Fatalf("backup file: %v, %v", st, err)
	}
	admin.do("POST", "/v1/admin/backup", map[string]any{"name": "snap.db"}).wantProblem(t, http.StatusConflict, "conflict")
	checkBackup(t, b.Path, model.DefaultTenant, "kept", 2)

	var def model.Backup
	admin.do("POST", "/v1/admin/backup", map[string]any{}).want(t, http.StatusCreated, &def)
	if filepath.Dir(def.Path) != dir || !regexp.MustCompile(`^logbook-\d{8}T\d{6}\.\d{3}Z\.db$`).MatchString(filepath.Base(def.Path)) {
		t.Errorf("default backup name: %s", def.Path)
	}
}

// Without a configured directory, backups go next to the database file.
func TestBackupDefaultDirectory(t *testing.T) {
	requireSQLite(t, "the default directory is beside the database file")
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "kept"})
	var b model.Backup
	c.do("POST", "/v1/admin/backup", map[string]any{"name": "one.db"}).want(t, http.StatusCreated, &b)
	db, err := c.store.DatabasePath(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(db), "backups", "one.db"); b.Path != want {
		t.Errorf("path %q, want %q", b.Path, want)
	}
	checkBackup(t, b.Path, model.DefaultTenant, "kept", 0)
}

// checkBackup opens a backup as a store: it must pass integrity_check and hold
// the tenant's session with its messages.
func checkBackup(t *testing.T, path, tenant, session string, messages int) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, ReadConns: 1})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer st.Close()
	if got, err := st.IntegrityCheck(ctx); err != nil || got != "ok" {
		t.Fatalf("backup integrity_check: %q, %v", got, err)
	}
	ses, err := st.GetSession(ctx, tenant, session)
	if err != nil {
		t.Fatalf("the backup lacks session %s: %v", session, err)
	}
	page, err := st.ListMessages(ctx, tenant, session, model.MessageFilter{}, repo.PageRequest{Limit: 50})
	if err != nil || len(page.Data) != messages || ses.MessageCount != int64(messages) {
		t.Errorf("the backup holds %d messages (count %d), want %d: %v", len(page.Data), ses.MessageCount, messages, err)
	}
}

// On PostgreSQL a backup is PostgreSQL's own: the answer says which command
// makes one, without the password, and nothing is written.
func TestBackupOnPostgresNamesPgDump(t *testing.T) {
	if !onPostgres {
		t.Skip("PostgreSQL only (run with LOGBOOK_TEST_BACKEND=postgres, as make test does)")
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	c := newClient(t, withBackupDir(dir))
	p := c.do("POST", "/v1/admin/backup", map[string]any{}).wantProblem(t, http.StatusConflict, "conflict")
	if !strings.Contains(p.Detail, "pg_dump") {
		t.Errorf("detail %q does not name pg_dump", p.Detail)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s was created", dir)
	}
}
