package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func TestIntegrityHealthy(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	purgeSession(t, s, "a")
	purgeAppend(t, s, "a", "one", "two", "three")
	purgeFork(t, s, "a", "f", 2)
	purgeAppend(t, s, "f", "four")
	mustCheckpoint(t, s, "a", 1, `{}`)
	waitIndexed(t, s, "t")
	rep, err := s.CheckIntegrity(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	want := model.IntegrityReport{OK: true, IntegrityCheck: "ok", CounterDrift: []model.CounterDrift{},
		IndexDrift: []model.IndexDrift{}, Repaired: []model.CounterDrift{}}
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("got %+v, want %+v", rep, want)
	}
}

// Each kind of damage is made by hand, as a bug or a bad restore could leave it,
// and the report names it for its tenant only; repair=counters fixes counters.
func TestIntegrityFindsAndRepairsDrift(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	purgeSession(t, s, "a")
	purgeAppend(t, s, "a", "one", "two", "three")
	purgeFork(t, s, "a", "f", 2)
	purgeAppend(t, s, "f", "four")
	purgeSession(t, s, "idx")
	purgeAppend(t, s, "idx", "five", "six")
	if _, err := s.CreateSession(ctx, "other", model.CreateSession{ID: "secret-of-other"}); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, s, "t")

	s.mustExec(t, `UPDATE sessions SET message_count = 99 WHERE tenant_id = 't' AND id = 'a'`)
	s.mustExec(t, `UPDATE sessions SET total_tokens = total_tokens + 7, total_cost = total_cost + 1 WHERE tenant_id = 't' AND id = 'f'`)
	s.mustExec(t, `UPDATE sessions SET message_count = 5 WHERE tenant_id = 'other'`)
	var gidA1 int64
	if err := s.rdb.QueryRow(`SELECT gid FROM messages WHERE tenant_id = 't' AND session_id = 'a' AND seq = 1`).Scan(&gidA1); err != nil {
		t.Fatal(err)
	}
	// The index is another file, written by the indexer's own connection.
	for _, q := range []string{
		`DELETE FROM messages_fts WHERE rowid = ` + itoa(gidA1<<8),
		`INSERT INTO messages_fts (rowid, content, tenant_id, session_id, seq) VALUES (999999 << 8, 'ghost', 't', 'ghost', 1)`,
	} {
		if _, err := s.idb.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// Rows whose session is gone need the foreign keys off, as a careless tool would.
	s.mustExec(t, `PRAGMA foreign_keys = OFF`)
	s.mustExec(t, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, tokens, cost, created_at, gid, cum_tokens, cum_cost)
		VALUES ('t', 'nowhere', 1, 'msg_orphan', 'user', 'x', 0, 0, 0, 888888, 0, 0)`)
	s.mustExec(t, `INSERT INTO checkpoints (tenant_id, session_id, iteration, id, client_id, state, last_seq, sha256, created_at)
		VALUES ('t', 'nowhere', 1, 'ckp_orphan', 'ckp_orphan', '{}', 0, '', 0)`)
	s.mustExec(t, `INSERT INTO request_keys (tenant_id, session_id, key, request_hash, seqs, created_at)
		VALUES ('t', 'nowhere', 'k', x'00', '[]', 0)`)
	s.mustExec(t, `INSERT INTO sessions (tenant_id, id, status, created_at, updated_at, parent_id, forked_at_seq, prefix_shared)
		VALUES ('t', 'lost-fork', 'created', 0, 0, 'nowhere', 0, 1)`)
	s.mustExec(t, `PRAGMA foreign_keys = ON`)

	rep, err := s.CheckIntegrity(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.IntegrityCheck != "ok" {
		t.Errorf("ok = %v, integrity_check = %q; want false, ok", rep.OK, rep.IntegrityCheck)
	}
	wantDrift := []model.CounterDrift{
		{SessionID: "a", Field: "message_count", Stored: 99, Actual: 3},
		{SessionID: "f", Field: "total_tokens", Stored: 3 + 3 + 4 + 7, Actual: 3 + 3 + 4},
		{SessionID: "f", Field: "total_cost", Stored: 0.001 + 0.002 + 0.001 + 1, Actual: 0.001 + 0.002 + 0.001},
	}
	if !sameDrift(rep.CounterDrift, wantDrift) {
		t.Errorf("counter drift:\ngot  %+v\nwant %+v", rep.CounterDrift, wantDrift)
	}
	if want := (model.OrphanCounts{Messages: 1, Checkpoints: 1, RequestKeys: 1, Forks: 1}); rep.Orphans != want {
		t.Errorf("orphans: got %+v, want %+v", rep.Orphans, want)
	}
	kinds := map[string]string{}
	for _, d := range rep.IndexDrift {
		kinds[d.Kind+" "+d.SessionID] = fmtDrift(d)
	}
	for _, k := range []string{"stale_index_rows ghost", "missing_index_rows a"} {
		if _, ok := kinds[k]; !ok {
			t.Errorf("index drift %q not reported; got %v", k, kinds)
		}
	}
	if len(kinds) != 2 {
		t.Errorf("index drift: got %v, want exactly 2", kinds)
	}

	// The other tenant's report shows its own drift and nothing of t's.
	other, err := s.CheckIntegrity(ctx, "other", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(other.CounterDrift) != 1 || other.CounterDrift[0].SessionID != "secret-of-other" || other.Orphans != (model.OrphanCounts{}) ||
		len(other.IndexDrift) != 0 {
		t.Errorf("other's report: %+v", other)
	}
	for _, d := range rep.CounterDrift {
		if d.SessionID == "secret-of-other" {
			t.Errorf("t's report names other's session: %+v", rep.CounterDrift)
		}
	}

	fixed, err := s.CheckIntegrity(ctx, "t", true)
	if err != nil {
		t.Fatal(err)
	}
	if !sameDrift(fixed.Repaired, wantDrift) || len(fixed.CounterDrift) != 0 {
		t.Errorf("repair: repaired %+v, still drifting %+v", fixed.Repaired, fixed.CounterDrift)
	}
	for id, want := range map[string][2]int64{"a": {3, 11}, "f": {3, 10}} {
		ses, err := s.GetSession(ctx, "t", id)
		if err != nil {
			t.Fatal(err)
		}
		if ses.MessageCount != want[0] || ses.TotalTokens != want[1] {
			t.Errorf("%s after repair: count %d tokens %d, want %v", id, ses.MessageCount, ses.TotalTokens, want)
		}
	}
	if again, err := s.CheckIntegrity(ctx, "t", true); err != nil || len(again.Repaired) != 0 {
		t.Errorf("a second repair fixed %+v (%v)", again.Repaired, err)
	}
	if o, _ := s.CheckIntegrity(ctx, "other", false); len(o.CounterDrift) != 1 {
		t.Errorf("t's repair touched other's counters: %+v", o.CounterDrift)
	}
}

func sameDrift(got, want []model.CounterDrift) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.SessionID != w.SessionID || g.Field != w.Field || driftAbs(g.Stored-w.Stored) > 1e-9 || driftAbs(g.Actual-w.Actual) > 1e-9 {
			return false
		}
	}
	return true
}

func driftAbs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func fmtDrift(d model.IndexDrift) string {
	var b strings.Builder
	b.WriteString(d.Kind)
	for _, p := range []*int64{d.FTSSeq, d.LastSeq, d.Rows} {
		if p != nil {
			b.WriteString(" " + itoa(*p))
		}
	}
	return b.String()
}

// A backup taken while writes go on is a sound database holding every write
// acknowledged before it started, and never overwrites a file.
func TestBackupWhileWriting(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	purgeSession(t, s, "a")
	purgeAppend(t, s, "a", "one", "two")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.AppendMessages(ctx, "t", "a", model.AppendRequest{Messages: []model.NewMessage{{Role: model.RoleUser, Content: model.TextContent("more")}}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	dest := filepath.Join(t.TempDir(), "nested", "copy.db")
	b, err := s.Backup(ctx, dest)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if b.Path != dest || b.Bytes <= 0 {
		t.Errorf("backup %+v", b)
	}

	db, err := sql.Open("sqlite", "file:"+dest+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("backup integrity_check: %q, %v", check, err)
	}
	var count, lastSeq, rows int64
	if err := db.QueryRow(`SELECT message_count, last_seq FROM sessions WHERE id = 'a'`).Scan(&count, &lastSeq); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM messages WHERE session_id = 'a'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if count < 2 || count != rows || lastSeq != rows {
		t.Errorf("backup: message_count %d, last_seq %d, rows %d: not one consistent snapshot", count, lastSeq, rows)
	}

	if _, err := s.Backup(ctx, dest); model.AsError(err).Kind != model.KindConflict {
		t.Errorf("second backup to the same path: %v, want conflict", err)
	}
	var size int64
	if err := db.QueryRow(`SELECT COUNT(*) FROM sessions`).Scan(&size); err != nil || size != 1 {
		t.Errorf("the refused backup damaged the first: %d sessions, %v", size, err)
	}
}
