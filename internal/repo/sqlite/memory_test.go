package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

func mustAgent(t testing.TB, s *Store, tenant, id string) model.Agent {
	t.Helper()
	a, err := s.CreateAgent(context.Background(), tenant, model.CreateAgent{ID: id, Name: id})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// 50 concurrent appends to a label that does not exist yet: one block, holding
// all 50 pieces, at version 50, with 50 versions of history.
func TestConcurrentAppendsMakeOneBlock(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	mustAgent(t, s, "t", "a")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.AppendBlock(ctx, "t", "a", "notes", fmt.Sprintf("piece-%02d", i), repo.EditByAPI); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	blocks, err := s.ListBlocks(ctx, "t", "a")
	if err != nil || len(blocks) != 1 {
		t.Fatalf("%d blocks (%v), want 1", len(blocks), err)
	}
	b := blocks[0]
	for i := range 50 {
		if !strings.Contains(b.Value, fmt.Sprintf("piece-%02d", i)) {
			t.Errorf("piece-%02d lost", i)
		}
	}
	if n := strings.Count(b.Value, "\n"); n != 49 || b.Version != 50 {
		t.Errorf("%d lines, version %d; want 50 lines, version 50", n+1, b.Version)
	}
	hist, err := s.BlockHistory(ctx, "t", "a", "notes", repo.PageRequest{Limit: 200})
	if err != nil || len(hist.Data) != 50 || hist.Data[0].Version != 50 || hist.Data[49].Version != 1 {
		t.Errorf("history: %d versions (%v)", len(hist.Data), err)
	}
}

func TestBlockRules(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	mustAgent(t, s, "t", "a")
	v1, created, err := s.PutBlock(ctx, "t", "a", "human", model.PutBlock{Value: "Name: Ann", Limit: 20}, nil)
	if err != nil || !created || v1.Version != 1 {
		t.Fatalf("put: %+v %v %v", v1, created, err)
	}
	t.Run("if_match_stale_is_412", func(t *testing.T) {
		stale := int64(7)
		_, _, err := s.PutBlock(ctx, "t", "a", "human", model.PutBlock{Value: "x"}, &stale)
		if model.AsError(err).Kind != model.KindPrecondition {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("limit_counts_characters", func(t *testing.T) {
		if _, err := s.ReplaceBlock(ctx, "t", "a", "human", "Ann", "Ännäöüß", repo.EditByAPI); err != nil {
			t.Fatalf("13 characters in 20 refused: %v", err)
		}
		_, err := s.AppendBlock(ctx, "t", "a", "human", "and a long tail", repo.EditByAPI)
		if e := model.AsError(err); e.Code != "limit_exceeded" || !strings.Contains(e.Msg, "9 over its limit of 20") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("replace_missing_text", func(t *testing.T) {
		_, err := s.ReplaceBlock(ctx, "t", "a", "human", "Bob", "Carl", repo.EditByAPI)
		if model.AsError(err).Code != "old_not_found" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("tool_cannot_create_or_touch_read_only", func(t *testing.T) {
		if b, err := s.AppendBlock(ctx, "t", "a", "nope", "x", repo.EditByTool); err != nil || b.Value != "x" || b.Version != 1 {
			t.Errorf("tool append to a missing block: %+v, %v; want it created", b, err)
		}
		if _, _, err := s.PutBlock(ctx, "t", "a", "persona", model.PutBlock{Value: "I am", ReadOnly: true}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendBlock(ctx, "t", "a", "persona", "x", repo.EditByTool); model.AsError(err).Code != "read_only" {
			t.Errorf("tool append to read-only: %v", err)
		}
		if _, err := s.AppendBlock(ctx, "t", "a", "persona", "helpful", repo.EditByAPI); err != nil {
			t.Errorf("API append to read-only: %v", err)
		}
	})
	t.Run("missing_agent", func(t *testing.T) {
		if _, err := s.AppendBlock(ctx, "t", "ghost", "human", "x", repo.EditByAPI); !model.IsNotFound(err, "agent") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestDeleteAgentRemovesItsMemory(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	mustAgent(t, s, "t", "a")
	mustAgent(t, s, "t", "b")
	for _, id := range []string{"a", "b"} {
		if _, err := s.AppendBlock(ctx, "t", id, "human", "x", repo.EditByAPI); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreatePassage(ctx, "t", id, model.CreatePassage{Content: "shared words"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "s", AgentID: ptr("a")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAgent(ctx, "t", "a"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.rdb.QueryRow(`SELECT (SELECT count(*) FROM blocks WHERE agent_id = 'a') + (SELECT count(*) FROM block_history WHERE agent_id = 'a')
		+ (SELECT count(*) FROM passages WHERE agent_id = 'a')`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows of a's memory left (%v)", n, err)
	}
	if hits, err := s.SearchPassages(ctx, "t", "b", model.PassageSearch{Query: "shared", Limit: 10}); err != nil || len(hits) != 1 {
		t.Errorf("b's passage: %d hits (%v)", len(hits), err)
	}
	if ses, err := s.GetSession(ctx, "t", "s"); err != nil || *ses.AgentID != "a" {
		t.Errorf("session lost its agent_id: %+v %v", ses, err)
	}
	if err := s.DeleteAgent(ctx, "t", "a"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// Each query's best hit, by bm25 over the passages below.
func TestPassageSearchRanking(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	mustAgent(t, s, "t", "a")
	passages := map[string]string{
		"coffee": "The user drinks black coffee every morning, no sugar.",
		"cat":    "The user has a cat named Miso who likes boxes.",
		"trip":   "The user is planning a trip to Lisbon in May with friends.",
		"job":    "The user works as a nurse on night shifts at the city hospital.",
		"allergy": "The user is allergic to peanuts; avoid recipes that contain peanuts or peanut oil. " +
			"Peanuts caused a hospital visit once.",
		"garden": "The user grows tomatoes and basil on the balcony garden.",
	}
	ids := map[string]string{}
	for name, text := range passages {
		p, err := s.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: text, Tags: []string{name}})
		if err != nil {
			t.Fatal(err)
		}
		ids[p.ID] = name
	}
	for _, tc := range []struct{ query, want string }{
		{"coffee", "coffee"},
		{"what is the cat called?", "cat"},
		{"travel plans Lisbon", "trip"},
		{"peanut", "allergy"},           // stemming: peanut ~ peanuts
		{"hospital peanuts", "allergy"}, // two matching words beat one
		{"night shift nurse", "job"},
		{"TOMATOES", "garden"},                 // case does not matter
		{`"basil" AND NEAR(tomato*`, "garden"}, // FTS5 syntax is just words
	} {
		hits, err := s.SearchPassages(ctx, "t", "a", model.PassageSearch{Query: tc.query, Limit: 3})
		if err != nil {
			t.Fatalf("%q: %v", tc.query, err)
		}
		if len(hits) == 0 || ids[hits[0].ID] != tc.want {
			got := []string{}
			for _, h := range hits {
				got = append(got, ids[h.ID])
			}
			t.Errorf("%q: top hits %v, want %s first", tc.query, got, tc.want)
			continue
		}
		if !strings.Contains(hits[0].Snippet, "[") {
			t.Errorf("%q: snippet %q marks no match", tc.query, hits[0].Snippet)
		}
	}
	t.Run("tags_filter_in_sql", func(t *testing.T) {
		hits, err := s.SearchPassages(ctx, "t", "a", model.PassageSearch{Query: "user", Tags: []string{"cat"}, Limit: 10})
		if err != nil || len(hits) != 1 || ids[hits[0].ID] != "cat" {
			t.Errorf("tags: %d hits (%v)", len(hits), err)
		}
	})
	t.Run("no_words_no_hits", func(t *testing.T) {
		hits, err := s.SearchPassages(ctx, "t", "a", model.PassageSearch{Query: `"*:()`, Limit: 10})
		if err != nil || len(hits) != 0 {
			t.Errorf("%d hits (%v)", len(hits), err)
		}
	})
}

// Agents see only their own memory, and tenants only theirs: the conditions are in
// the ranking query, so neither leaks nor loses results to another's better hits.
func TestSearchIsolation(t *testing.T) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	for _, tenant := range []string{"t1", "t2"} {
		for _, agent := range []string{"a", "b"} {
			mustAgent(t, s, tenant, agent)
			// many strong hits for everyone else, one weak hit for t1/a
			for i := range 20 {
				content := fmt.Sprintf("secret secret secret of %s/%s #%d", tenant, agent, i)
				if tenant == "t1" && agent == "a" {
					content = fmt.Sprintf("one secret of t1/a #%d and much other text to weaken its rank", i)
				}
				if _, err := s.CreatePassage(ctx, tenant, agent, model.CreatePassage{Content: content}); err != nil {
					t.Fatal(err)
				}
			}
			sesID := tenant + agent
			if _, err := s.CreateSession(ctx, tenant, model.CreateSession{ID: sesID, AgentID: ptr(agent)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AppendMessages(ctx, tenant, sesID, model.AppendRequest{Messages: []model.NewMessage{
				{Role: model.RoleUser, Content: model.TextContent("the password is swordfish, says " + tenant + "/" + agent)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hits, err := s.SearchPassages(ctx, "t1", "a", model.PassageSearch{Query: "secret", Limit: 5})
	if err != nil || len(hits) != 5 {
		t.Fatalf("%d hits (%v), want 5 of t1/a's own", len(hits), err)
	}
	for _, h := range hits {
		if !strings.Contains(h.Content, "of t1/a") {
			t.Errorf("t1/a found %q", h.Content)
		}
	}
	waitIndexed(t, s, "t1")
	for _, agent := range []string{"a", "b"} {
		res, err := s.SearchMessages(ctx, "t1", model.MessageSearch{Query: "swordfish", AgentID: agent, Limit: 10})
		if err != nil || len(res.Data) != 1 || !strings.HasSuffix(res.Data[0].Content, "t1/"+agent) {
			t.Errorf("t1 agent %s: %+v (%v)", agent, res.Data, err)
		}
	}
	res, err := s.SearchMessages(ctx, "t1", model.MessageSearch{Query: "swordfish", Limit: 10})
	if err != nil || len(res.Data) != 2 {
		t.Errorf("tenant-wide: %d hits (%v), want t1's 2", len(res.Data), err)
	}
	for _, h := range res.Data {
		if !strings.Contains(h.Content, "t1/") {
			t.Errorf("t1 found %q", h.Content)
		}
	}
}

func waitIndexed(t *testing.T, s *Store, tenant string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := s.SearchMessages(context.Background(), tenant, model.MessageSearch{Query: "x", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		var deletes int64
		if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM index_deletes WHERE id > (SELECT deletes_upto FROM idx.index_state)`).
			Scan(&deletes); err != nil {
			t.Fatal(err)
		}
		if res.IndexLag == 0 && deletes == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("index still %d messages behind", res.IndexLag)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Search says how far behind the index is until the indexer catches up. The
// indexer's steps are driven here by hand (no indexer goroutine), so the lag is
// exactly what was appended.
func TestMessageIndexCatchesUp(t *testing.T) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true, NoMessageIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	msgs := make([]model.NewMessage, 1000)
	for i := range msgs {
		msgs[i] = model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("message number %d about zebras", i))}
	}
	if _, err := s.AppendMessages(ctx, "t", "s", model.AppendRequest{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	res, err := s.SearchMessages(ctx, "t", model.MessageSearch{Query: "zebras", Limit: 5})
	if err != nil || res.IndexLag != 1000 || len(res.Data) != 0 {
		t.Fatalf("right after the append: lag %d, %d hits (%v); want 1000 and 0", res.IndexLag, len(res.Data), err)
	}
	st, err := s.readIndexState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for more := true; more; {
		if more, err = s.indexStep(ctx, &st, busyStep); err != nil {
			t.Fatal(err)
		}
	}
	res, err = s.SearchMessages(ctx, "t", model.MessageSearch{Query: "zebras number 777", Limit: 1})
	if err != nil || len(res.Data) != 1 || res.Data[0].Seq != 778 {
		t.Fatalf("after indexing: %+v (%v)", res.Data, err)
	}
	if got := s.Stats().Indexed; got != 1000 {
		t.Errorf("indexed %d, want 1000 (each message once)", got)
	}
}
