package postgres_test

import (
	"context"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// TestVectorCacheAcrossHandles: two Logbook processes on one database each
// keep their agents' vectors in memory; a passage one stores, or deletes, is
// what the other's next search by meaning sees.
func TestVectorCacheAcrossHandles(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	var h [2]*postgres.Store
	for i := range h {
		st, err := postgres.Open(ctx, postgres.Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		h[i] = st
	}
	if _, err := h[0].CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	add := func(st *postgres.Store, content string, v []float32) model.Passage {
		t.Helper()
		p, err := st.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: content, Embedding: v, EmbeddingModel: "toy"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := func(st *postgres.Store) string {
		t.Helper()
		hits, err := st.SearchPassages(ctx, "t", "a", model.PassageSearch{Mode: model.SearchVector, QueryEmbedding: []float32{1, 0}, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 {
			return ""
		}
		return hits[0].ID
	}
	far := add(h[0], "far", []float32{0, 1})
	for i := range h {
		if got := first(h[i]); got != far.ID { // both caches loaded
			t.Fatalf("handle %d: %s", i, got)
		}
	}
	near := add(h[1], "near", []float32{1, 0.1})
	for i := range h {
		if got := first(h[i]); got != near.ID {
			t.Fatalf("handle %d after the other's insert: %s, want %s", i, got, near.ID)
		}
	}
	if err := h[0].DeletePassage(ctx, "t", "a", near.ID); err != nil {
		t.Fatal(err)
	}
	for i := range h {
		if got := first(h[i]); got != far.ID {
			t.Fatalf("handle %d after the delete: %s, want %s", i, got, far.ID)
		}
	}
}
