package sqlite

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// purgeAppend appends one message per content to a session of tenant "t".
func purgeAppend(t *testing.T, s *Store, session string, contents ...string) {
	t.Helper()
	req := model.AppendRequest{}
	for i, c := range contents {
		name := fmt.Sprintf("n%d", i)
		req.Messages = append(req.Messages, model.NewMessage{Role: model.RoleUser, Content: model.TextContent(c), Name: &name,
			Tokens: int64(len(c)), Cost: 0.001 * float64(i+1), Metadata: model.Object(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if _, err := s.AppendMessages(context.Background(), "t", session, req); err != nil {
		t.Fatal(err)
	}
}

func purgeSession(t *testing.T, s *Store, id string) {
	t.Helper()
	if _, err := s.CreateSession(context.Background(), "t", model.CreateSession{ID: id}); err != nil {
		t.Fatal(err)
	}
}

func purgeFork(t *testing.T, s *Store, parent, id string, at int64) {
	t.Helper()
	if _, err := s.ForkSession(context.Background(), "t", parent, model.ForkSession{ID: id, AtSeq: &at}); err != nil {
		t.Fatal(err)
	}
}

// purgeRowsOf counts one session's rows in every table a purge must clear.
func purgeRowsOf(t *testing.T, s *Store, tenant, session string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for name, q := range map[string]string{
		"sessions":     `SELECT COUNT(*) FROM sessions WHERE tenant_id = ? AND id = ?`,
		"messages":     `SELECT COUNT(*) FROM messages WHERE tenant_id = ? AND session_id = ?`,
		"checkpoints":  `SELECT COUNT(*) FROM checkpoints WHERE tenant_id = ? AND session_id = ?`,
		"request_keys": `SELECT COUNT(*) FROM request_keys WHERE tenant_id = ? AND session_id = ?`,
		"messages_fts": `SELECT COUNT(*) FROM messages_fts WHERE tenant_id = ? AND session_id = ?`,
	} {
		var n int64
		if err := s.rdb.QueryRow(q, tenant, session).Scan(&n); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = n
	}
	return out
}

func totalFTSRows(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM messages_fts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPurgeSessionRemovesEveryRow(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	purgeSession(t, s, "gone")
	purgeSession(t, s, "kept")
	req := model.AppendRequest{RequestKey: "req-1", Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.TextContent("zebra one"), IdempotencyKey: "m1"},
		{Role: model.RoleUser, Content: model.TextContent("zebra two")},
	}}
	for _, id := range []string{"gone", "kept"} {
		if _, err := s.AppendMessages(ctx, "t", id, req); err != nil {
			t.Fatal(err)
		}
		purgeAppend(t, s, id, "zebra three", "zebra four")
		mustCheckpoint(t, s, id, 1, `{}`)
		mustCheckpoint(t, s, id, 2, `{}`)
	}
	waitIndexed(t, s, "t")
	before := purgeRowsOf(t, s, "t", "gone")
	if want := (map[string]int64{"sessions": 1, "messages": 4, "checkpoints": 2, "request_keys": 1, "messages_fts": 4}); !reflect.DeepEqual(before, want) {
		t.Fatalf("before the purge: got %v, want %v", before, want)
	}
	kept := purgeRowsOf(t, s, "t", "kept")

	if err := s.PurgeSession(ctx, "t", "gone"); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, s, "t") // the indexer removes the index rows, beside the writer
	for table, n := range purgeRowsOf(t, s, "t", "gone") {
		if n != 0 {
			t.Errorf("%s still holds %d rows of the purged session", table, n)
		}
	}
	if got := purgeRowsOf(t, s, "t", "kept"); !reflect.DeepEqual(got, kept) {
		t.Errorf("the other session changed: got %v, want %v", got, kept)
	}
	if got := totalFTSRows(t, s); got != kept["messages_fts"] {
		t.Errorf("index holds %d rows, want only the kept session's %d", got, kept["messages_fts"])
	}
	res, err := s.SearchMessages(ctx, "t", model.MessageSearch{Query: "zebra", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Data {
		if h.SessionID != "kept" {
			t.Errorf("search finds the purged session: %+v", h)
		}
	}
	if err := s.PurgeSession(ctx, "t", "gone"); !model.IsNotFound(err, "session") {
		t.Errorf("second purge: got %v, want not_found", err)
	}
	// The id is free again, and its idempotency keys are gone with it.
	purgeSession(t, s, "gone")
	out, err := s.AppendMessages(ctx, "t", "gone", req)
	if err != nil || out.Replayed || out.Messages[0].Seq != 1 {
		t.Errorf("append after purge: %+v, %v; want a fresh write at seq 1", out, err)
	}
}

// Another tenant's session of the same id is not touched.
func TestPurgeIsTenantScoped(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, "other", model.CreateSession{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PurgeSession(ctx, "t", "x"); !model.IsNotFound(err, "session") {
		t.Fatalf("purge of another tenant's session: %v, want not_found", err)
	}
	if _, err := s.GetSession(ctx, "other", "x"); err != nil {
		t.Fatal(err)
	}
}

// purgeHistory reads a session's whole listing.
func purgeHistory(t *testing.T, s *Store, id string) []model.Message {
	t.Helper()
	p, err := s.ListMessages(context.Background(), "t", id, model.MessageFilter{}, repo.PageRequest{Limit: model.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return p.Data
}

// withoutIDs blanks the ids of the messages at or below seq: a fork's copied
// prefix gets new ids, everything else about each message stays.
func withoutIDs(ms []model.Message, upto int64) []model.Message {
	out := make([]model.Message, len(ms))
	for i, m := range ms {
		if m.Seq <= upto {
			m.ID = ""
		}
		out[i] = m
	}
	return out
}

// A parent with live forks, and a fork of a fork, is purged: the forks read the
// same messages as before, keep their counters, and stay searchable.
func TestPurgeKeepsForksWhole(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	// root (3) ← mid forked at 2, then 3 of its own (seq 3..5)
	// mid ← child forked at 4 (root 1..2, mid 3..4), then 2 of its own (5..6)
	// child ← grand forked at 5 (…, child 5), then 1 of its own (6)
	// mid ← late forked at 0; mid ← detached, an ordinary (non-shared) session
	purgeSession(t, s, "root")
	purgeAppend(t, s, "root", "alpha root", "beta root", "gamma root")
	purgeFork(t, s, "root", "mid", 2)
	purgeAppend(t, s, "mid", "delta mid", "epsilon mid", "zeta mid")
	purgeFork(t, s, "mid", "child", 4)
	purgeAppend(t, s, "child", "eta child", "theta child")
	purgeFork(t, s, "child", "grand", 5)
	purgeAppend(t, s, "grand", "iota grand")
	purgeFork(t, s, "mid", "late", 0)
	purgeAppend(t, s, "late", "kappa late")
	waitIndexed(t, s, "t")

	ids := []string{"root", "child", "grand", "late"}
	listings := map[string][]model.Message{}
	sessions := map[string]model.Session{}
	for _, id := range ids {
		listings[id] = purgeHistory(t, s, id)
		var err error
		if sessions[id], err = s.GetSession(ctx, "t", id); err != nil {
			t.Fatal(err)
		}
	}
	if len(listings["grand"]) != 6 || listings["grand"][1].Content.Text != "beta root" || listings["grand"][3].Content.Text != "epsilon mid" {
		t.Fatalf("set-up: grand reads %+v", listings["grand"])
	}

	if err := s.PurgeSession(ctx, "t", "mid"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(ctx, "t", "mid"); !model.IsNotFound(err, "session") {
		t.Fatalf("mid survived its purge: %v", err)
	}
	for _, id := range ids {
		got := purgeHistory(t, s, id)
		var upto int64
		if id == "child" || id == "grand" {
			upto = 4 // child's copied prefix, which grand reads through child
		}
		if !reflect.DeepEqual(withoutIDs(got, upto), withoutIDs(listings[id], upto)) {
			t.Errorf("%s reads differently after the purge:\ngot  %+v\nwant %+v", id, got, listings[id])
		}
		ses, err := s.GetSession(ctx, "t", id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ses, sessions[id]) {
			t.Errorf("session %s changed:\ngot  %+v\nwant %+v", id, ses, sessions[id])
		}
	}
	// The copies are child's own rows now, with new ids.
	if n := purgeRowsOf(t, s, "t", "child")["messages"]; n != 6 {
		t.Errorf("child stores %d messages, want 6 (4 copied + 2 own)", n)
	}
	for _, m := range purgeHistory(t, s, "child")[:4] {
		for _, old := range listings["child"][:4] {
			if m.ID == old.ID {
				t.Errorf("copied message seq %d kept id %s", m.Seq, m.ID)
			}
		}
	}
	var shared int
	if err := s.rdb.QueryRow(`SELECT prefix_shared FROM sessions WHERE tenant_id = 't' AND id = 'child'`).Scan(&shared); err != nil || shared != 0 {
		t.Errorf("child prefix_shared = %d (%v), want 0", shared, err)
	}

	// Searchable through the lineage, as before.
	waitIndexed(t, s, "t")
	for _, c := range []struct{ session, word string }{
		{"child", "alpha"}, {"child", "delta"}, {"child", "epsilon"}, {"grand", "beta"}, {"grand", "epsilon"},
		{"grand", "eta"}, {"grand", "iota"},
	} {
		res, err := s.SearchMessages(ctx, "t", model.MessageSearch{Query: c.word, SessionID: c.session, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 1 || res.Data[0].SessionID != c.session {
			t.Errorf("search %q in %s: %+v, want one hit", c.word, c.session, res.Data)
		}
	}
	// mid's own messages are searchable only through the forks that copied them.
	res, err := s.SearchMessages(ctx, "t", model.MessageSearch{Query: "zeta", Limit: 10})
	if err != nil || len(res.Data) != 0 {
		t.Errorf("mid's last message (never inherited) is still found: %+v, %v", res.Data, err)
	}
	rep, err := s.CheckIntegrity(ctx, "t", false)
	if err != nil || !rep.OK {
		t.Errorf("integrity after the purge: %+v, %v", rep, err)
	}
	// Appends continue on both forks.
	purgeAppend(t, s, "child", "lambda")
	purgeAppend(t, s, "grand", "mu")
	if got := purgeHistory(t, s, "grand"); len(got) != 7 || got[6].Content.Text != "mu" {
		t.Errorf("grand after an append: %+v", got)
	}
}

// A bulk purge works in batches, leaves first; its dry run counts what the real
// run erases, and forks outside the purge keep their history.
func TestPurgeSessionsInBatches(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	const n = 2*repo.PurgeBatch + 7
	for i := range n {
		id := fmt.Sprintf("old-%03d", i)
		purgeSession(t, s, id)
		purgeAppend(t, s, id, "a", "b")
		if i%10 == 0 {
			mustCheckpoint(t, s, id, 1, `{}`)
		}
	}
	// A chain of completed forks (each erased before its parent), and an active
	// fork that must survive with its prefix.
	purgeFork(t, s, "old-000", "old-fork-1", 1)
	purgeAppend(t, s, "old-fork-1", "c")
	purgeFork(t, s, "old-fork-1", "old-fork-2", 2)
	purgeAppend(t, s, "old-fork-2", "d")
	purgeFork(t, s, "old-001", "survivor", 2)
	purgeAppend(t, s, "survivor", "e")
	purgeSession(t, s, "recent")
	purgeAppend(t, s, "recent", "f")
	for _, id := range []string{"recent", "survivor"} {
		if _, err := s.CloseSession(ctx, "t", id); err != nil {
			t.Fatal(err)
		}
	}
	s.mustExec(t, `UPDATE sessions SET status = 'completed', updated_at = 1000 WHERE id LIKE 'old-%'`)
	s.mustExec(t, `UPDATE sessions SET status = 'active' WHERE id = 'survivor'`)
	survivor := purgeHistory(t, s, "survivor")

	in := model.PurgeRequest{Status: model.StatusCompleted}.WithCutoff(2000)
	in.DryRun = true
	dry, err := s.PurgeSessions(ctx, "t", in)
	if err != nil {
		t.Fatal(err)
	}
	wantSessions := int64(n + 2)
	wantMessages := int64(2*n + 1 + 1) // each fork stores only its own message
	wantCheckpoints := int64((n + 9) / 10)
	if want := (model.PurgeResult{DryRun: true, Sessions: wantSessions, Messages: wantMessages, Checkpoints: wantCheckpoints}); dry != want {
		t.Fatalf("dry run: got %+v, want %+v", dry, want)
	}
	if got, _ := s.PurgeSessions(ctx, "t", in); got != dry {
		t.Fatalf("a second dry run differs: %+v vs %+v", got, dry)
	}

	writes := s.Stats().Writes
	in.DryRun = false
	done, err := s.PurgeSessions(ctx, "t", in)
	if err != nil {
		t.Fatal(err)
	}
	dry.DryRun = false
	if done != dry {
		t.Errorf("real run: got %+v, want the dry run's %+v", done, dry)
	}
	if batches := s.Stats().Writes - writes; batches < 4 {
		t.Errorf("%d sessions purged in %d writer transactions, want at least 4 (batches of %d, then an empty one)",
			done.Sessions, batches, repo.PurgeBatch)
	}
	var left int64
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM sessions WHERE id LIKE 'old-%'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d old sessions left (%v)", left, err)
	}
	if got := purgeHistory(t, s, "survivor"); !reflect.DeepEqual(withoutIDs(got, 2), withoutIDs(survivor, 2)) {
		t.Errorf("the surviving fork reads differently:\ngot  %+v\nwant %+v", got, survivor)
	}
	if _, err := s.GetSession(ctx, "t", "recent"); err != nil {
		t.Errorf("a session updated after the cutoff was purged: %v", err)
	}
	if again, err := s.PurgeSessions(ctx, "t", in); err != nil || again.Sessions != 0 {
		t.Errorf("a second purge found %+v, %v", again, err)
	}
	rep, err := s.CheckIntegrity(ctx, "t", false)
	if err != nil || !rep.OK {
		t.Errorf("integrity after the purge: %+v, %v", rep, err)
	}
}
