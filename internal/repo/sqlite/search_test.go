package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// openUnindexed opens a store whose indexer does not run, so that a test
// drives the indexer's steps itself.
func openUnindexed(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true, NoMessageIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// indexAll runs the indexer's steps until it has caught up, then recounts
// the lag as the indexer goroutine does.
func indexAll(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	st, err := s.readIndexState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for more := true; more; {
		if more, err = s.indexStep(ctx, &st, idleStep); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.lag.resync(ctx, s.rdb, st.nextGID); err != nil {
		t.Fatal(err)
	}
}

// appendTexts appends one user message per text to a tenant's session,
// creating the session first.
func appendTexts(t *testing.T, s *Store, tenant, session string, texts ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.GetSession(ctx, tenant, session); model.IsNotFound(err, "session") {
		if _, err := s.CreateSession(ctx, tenant, model.CreateSession{ID: session}); err != nil {
			t.Fatal(err)
		}
	}
	for lo := 0; lo < len(texts); lo += 1000 {
		var req model.AppendRequest
		for _, c := range texts[lo:min(lo+1000, len(texts))] {
			req.Messages = append(req.Messages, model.NewMessage{Role: model.RoleUser, Content: model.TextContent(c)})
		}
		if _, err := s.AppendMessages(ctx, tenant, session, req); err != nil {
			t.Fatal(err)
		}
	}
}

func search(t *testing.T, s *Store, tenant string, in model.MessageSearch) model.SearchResult[model.MessageHit] {
	t.Helper()
	if in.Limit == 0 {
		in.Limit = 10
	}
	res, err := s.SearchMessages(context.Background(), tenant, in)
	if err != nil {
		t.Fatalf("search %+v: %v", in, err)
	}
	return res
}

// A word in more rows than a search may rank is matched newest first, after
// the hits of the query's rarer words, and the answer says it is partial; a
// query of rare words alone is ranked whole. Another tenant's rows never
// answer, whichever way a word is matched.
func TestSearchRanksRareWordsAndBoundsCommonOnes(t *testing.T) {
	s := openUnindexed(t)
	common := make([]string, rankedRows+50)
	for i := range common {
		common[i] = fmt.Sprintf("plain chatter number%d", i)
	}
	appendTexts(t, s, "t", "bulk", common...)
	appendTexts(t, s, "t", "few", "a heron by the river", "heron heron chatter", "nothing here")
	appendTexts(t, s, "u", "theirs", "their heron", "their chatter")
	indexAll(t, s)

	rare := search(t, s, "t", model.MessageSearch{Query: "heron"})
	if len(rare.Data) != 2 || rare.Partial || rare.Data[0].Seq != 2 || rare.Data[0].Rank >= rare.Data[1].Rank || rare.Data[1].Rank >= 0 {
		t.Fatalf("heron: %+v, want seq 2 (two herons) then seq 1, ranked by bm25, complete", rare)
	}

	mixed := search(t, s, "t", model.MessageSearch{Query: "heron chatter", Limit: 5})
	if !mixed.Partial || len(mixed.Data) != 5 {
		t.Fatalf("heron chatter: partial %v, %d hits; want partial and 5", mixed.Partial, len(mixed.Data))
	}
	for i, h := range mixed.Data[:2] {
		if h.SessionID != "few" || h.Rank >= 0 {
			t.Errorf("hit %d %+v: want a ranked heron of session few", i, h)
		}
	}
	// Then chatter alone, newest first: the bulk session's last messages.
	for i, h := range mixed.Data[2:] {
		if want := int64(len(common) - i); h.SessionID != "bulk" || h.Seq != want || h.Rank != 0 {
			t.Errorf("hit %d: %s seq %d rank %v, want bulk seq %d rank 0", i+2, h.SessionID, h.Seq, h.Rank, want)
		}
	}

	only := search(t, s, "t", model.MessageSearch{Query: "chatter", Limit: 3})
	if !only.Partial || len(only.Data) != 3 || only.Data[0].SessionID != "few" || only.Data[0].Seq != 2 {
		t.Errorf("chatter: %+v, want partial, the newest first (few seq 2)", only)
	}
	for _, res := range []model.SearchResult[model.MessageHit]{rare, mixed, only} {
		for _, h := range res.Data {
			if strings.HasPrefix(h.Content, "their") {
				t.Errorf("tenant t found tenant u's %q", h.Content)
			}
		}
	}
	if theirs := search(t, s, "u", model.MessageSearch{Query: "chatter"}); len(theirs.Data) != 1 || theirs.Data[0].Content != "their chatter" {
		t.Errorf("tenant u's chatter: %+v", theirs)
	}

	// Filters apply within each pass: the newest-first pass skips what they
	// refuse and fills the answer from older rows, up to the rows it may read.
	ctx := context.Background()
	if _, err := s.AppendMessages(ctx, "t", "bulk", model.AppendRequest{Messages: []model.NewMessage{
		{Role: model.RoleAssistant, Content: model.TextContent("assistant chatter")},
		{Role: model.RoleUser, Content: model.TextContent("user chatter")}}}); err != nil {
		t.Fatal(err)
	}
	indexAll(t, s)
	filtered := search(t, s, "t", model.MessageSearch{Query: "chatter", SessionID: "bulk", Roles: []model.Role{model.RoleAssistant}})
	if len(filtered.Data) != 1 || filtered.Data[0].Content != "assistant chatter" || !filtered.Partial {
		t.Errorf("assistant chatter in bulk: %+v", filtered)
	}
}

// A session's search is narrowed by the session's tokens in the index: a fork
// finds its inherited prefix and its own rows, not its parent's rows past the
// fork, nor the session's namesake in another tenant.
func TestSearchWithinASessionAndItsFork(t *testing.T) {
	s := openUnindexed(t)
	ctx := context.Background()
	appendTexts(t, s, "t", "p", "kestrel one", "kestrel two", "kestrel three")
	at := int64(2)
	if _, err := s.ForkSession(ctx, "t", "p", model.ForkSession{ID: "f", AtSeq: &at}); err != nil {
		t.Fatal(err)
	}
	appendTexts(t, s, "t", "f", "kestrel four")
	appendTexts(t, s, "u", "f", "kestrel of another tenant")
	indexAll(t, s)

	for _, tc := range []struct {
		session string
		seqs    []int64
	}{{"p", []int64{1, 2, 3}}, {"f", []int64{1, 2, 3}}} {
		res := search(t, s, "t", model.MessageSearch{Query: "kestrel", SessionID: tc.session})
		var got []int64
		for _, h := range res.Data {
			if h.SessionID != tc.session || strings.Contains(h.Content, "another") {
				t.Errorf("search of %s found %+v", tc.session, h)
			}
			got = append(got, h.Seq)
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(tc.seqs) {
			t.Errorf("search of %s found seqs %v, want %v", tc.session, got, tc.seqs)
		}
	}
	res := search(t, s, "t", model.MessageSearch{Query: "kestrel", SessionID: "f"})
	for _, h := range res.Data {
		if h.Seq == 3 && h.Content != "kestrel four" {
			t.Errorf("fork f read its parent's seq 3 %q", h.Content)
		}
	}
}

func sorted(v []int64) []int64 {
	out := append([]int64(nil), v...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// index_lag is counted from the indexer's book: per tenant, only what the
// indexer has not reached, and a message purged before it was indexed stops
// counting once the indexer has caught up.
func TestIndexLagIsTheTenantsBacklog(t *testing.T) {
	s := openUnindexed(t)
	ctx := context.Background()
	lag := func(tenant string) int64 {
		t.Helper()
		return search(t, s, tenant, model.MessageSearch{Query: "anything"}).IndexLag
	}
	appendTexts(t, s, "t", "a", "one", "two", "three", "four", "five")
	appendTexts(t, s, "u", "b", "six", "seven", "eight")
	if a, b := lag("t"), lag("u"); a != 5 || b != 3 {
		t.Fatalf("lag t %d u %d, want 5 and 3", a, b)
	}
	indexAll(t, s)
	if a, b := lag("t"), lag("u"); a != 0 || b != 0 {
		t.Fatalf("after indexing: lag t %d u %d, want 0", a, b)
	}
	appendTexts(t, s, "t", "gone", "nine", "ten")
	if got := lag("t"); got != 2 {
		t.Fatalf("lag %d, want 2", got)
	}
	if err := s.PurgeSession(ctx, "t", "gone"); err != nil {
		t.Fatal(err)
	}
	indexAll(t, s)
	if a, b := lag("t"), lag("u"); a != 0 || b != 0 {
		t.Errorf("after a purge of unindexed messages and a catch-up: lag t %d u %d, want 0", a, b)
	}
	appendTexts(t, s, "t", "a", "eleven")
	if got := lag("t"); got != 1 {
		t.Errorf("lag %d, want 1", got)
	}
}

// The hits' messages are read by primary key, a chunk of candidates at a
// time: the plan names the key, never a scan of the tenant's messages.
func TestSearchReadsHitsByPrimaryKey(t *testing.T) {
	s := openUnindexed(t)
	appendTexts(t, s, "t", "a", "osprey")
	indexAll(t, s)
	rows, err := s.rdb.Query(`EXPLAIN QUERY PLAN SELECT m.session_id, m.seq, m.id, m.role, m.created_at, m.content
		FROM json_each(?) j CROSS JOIN messages m ON m.tenant_id = ? AND m.session_id = j.value->>0 AND m.seq = j.value->>1
		WHERE NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = m.tenant_id AND x.id = m.session_id AND x.expires_at <= ?)`,
		`[["a",1]]`, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	plan := explainPlan(t, rows)
	if !strings.Contains(plan, "SEARCH m USING PRIMARY KEY (tenant_id=? AND session_id=? AND seq=?)") || strings.Contains(plan, "SCAN m") {
		t.Errorf("plan:\n%s", plan)
	}
}
