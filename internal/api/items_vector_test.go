package api_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// waitItemsEmbedded waits until every item at paths is embedded (ready).
func waitItemsEmbedded(t testing.TB, c *client, paths ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range paths {
		for {
			var it model.Item
			c.do("GET", "/v1/items/"+p, nil).want(t, http.StatusOK, &it)
			if it.EmbeddingState != nil && *it.EmbeddingState == model.EmbeddingReady {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("item %s still %v after 10 s (%v)", p, it.EmbeddingState, it.EmbeddingError)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestItemSearchByMeaning(t *testing.T) {
	emb, withEmb := withEmbedding(t, true)
	c := newClient(t, withEmb)
	mustPutItem(t, c, "mem/car", map[string]any{"value": map[string]any{"text": "I drive my sedan to the office", "kind": "fact"}, "index": []string{"text"}})
	mustPutItem(t, c, "mem/pet", map[string]any{"value": map[string]any{"text": "the kitten sleeps all day", "kind": "fact"}, "index": []string{"text"}})
	mustPutItem(t, c, "mem/both", map[string]any{"value": map[string]any{"notes": []string{"a puppy", "an automobile"}, "kind": "list"},
		"index": []string{"notes[*]"}})
	mustPutItem(t, c, "mem/plain", map[string]any{"value": map[string]any{"text": "vehicle", "kind": "fact"}})
	waitItemsEmbedded(t, c, "mem/car", "mem/pet", "mem/both")

	p := itemSearch(t, c, map[string]any{"query": "which vehicle", "limit": 10}, "")
	got := hitKeys(p.Data)
	// car and both (its second text) match the query's concept; plain has
	// no embedded text, so it comes after every scored item.
	if len(got) != 4 || got[3] != "mem/plain" || p.Data[3].Score != nil || !slices.Contains(got[:2], "mem/car") || !slices.Contains(got[:2], "mem/both") {
		t.Fatalf("ranking %v", got)
	}
	for i := 0; i < 3; i++ {
		if p.Data[i].Score == nil || (i > 0 && *p.Data[i].Score > *p.Data[i-1].Score) {
			t.Fatalf("scores of %v not descending: %v", got, p.Data)
		}
	}
	page := itemSearch(t, c, map[string]any{"query": "which vehicle", "limit": 1, "offset": 1}, "")
	if len(page.Data) != 1 || page.Data[0].Key != p.Data[1].Key || !page.HasMore || page.NextCursor != nil {
		t.Fatalf("offset page %v (more %v)", hitKeys(page.Data), page.HasMore)
	}
	filtered := itemSearch(t, c, map[string]any{"query": "kitten", "filter": map[string]any{"kind": "fact"}}, "")
	if got := hitKeys(filtered.Data); len(got) != 3 || got[0] != "mem/pet" {
		t.Fatalf("filtered ranking %v", got)
	}

	t.Run("unchanged_text_keeps_its_embedding", func(t *testing.T) {
		_, before := emb.standin.Calls()
		it := mustPutItem(t, c, "mem/car", map[string]any{"value": map[string]any{"text": "I drive my sedan to the office", "kind": "old fact"}, "index": []string{"text"}})
		if it.EmbeddingState == nil || *it.EmbeddingState != model.EmbeddingReady || it.Version != 2 {
			t.Fatalf("re-put with the same text: %v v%d", it.EmbeddingState, it.Version)
		}
		changed := mustPutItem(t, c, "mem/car", map[string]any{"value": map[string]any{"text": "I walk", "kind": "fact"}, "index": []string{"text"}})
		if changed.EmbeddingState == nil || *changed.EmbeddingState != model.EmbeddingPending {
			t.Fatalf("re-put with a new text: %v", changed.EmbeddingState)
		}
		waitItemsEmbedded(t, c, "mem/car")
		if _, after := emb.standin.Calls(); after != before+1 {
			t.Fatalf("the endpoint embedded %d texts for two puts, want 1", after-before)
		}
		unindexed := mustPutItem(t, c, "mem/car", map[string]any{"value": map[string]any{"text": "I walk"}, "index": false})
		if unindexed.EmbeddingState != nil || unindexed.Index != nil {
			t.Fatalf("index false kept %v %v", unindexed.EmbeddingState, unindexed.Index)
		}
	})

	t.Run("batch_embeds_each_query_once", func(t *testing.T) {
		var res model.ItemBatchResult
		c.do("POST", "/v1/items/batch", map[string]any{"ops": []any{
			map[string]any{"op": "search", "namespace_prefix": []string{"mem"}, "query": "cat", "limit": 1},
			map[string]any{"op": "search", "namespace_prefix": []string{"mem"}, "query": "cat", "limit": 1, "offset": 1},
		}}).want(t, http.StatusOK, &res)
		if len(res.Results[0].Hits.Data) != 1 || res.Results[0].Hits.Data[0].Key != "pet" {
			t.Fatalf("batch search %+v", res.Results[0].Hits.Data)
		}
	})
}

// Without an endpoint an item is stored with its index, and nothing waits.
func TestItemIndexWithoutEndpoint(t *testing.T) {
	c := newClient(t)
	it := mustPutItem(t, c, "mem/x", map[string]any{"value": map[string]any{"text": "hello"}, "index": []string{"text"}})
	if it.EmbeddingState != nil || !slices.Equal(it.Index, []string{"text"}) {
		t.Fatalf("no endpoint: state %v index %v", it.EmbeddingState, it.Index)
	}
}
