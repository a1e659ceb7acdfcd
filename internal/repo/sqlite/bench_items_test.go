package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// BenchmarkItemSearchByMeaning is an item search by meaning under a
// namespace prefix: 10,000 items of one user, each with one embedded text of
// 768 numbers, top 10, with and without a filter on the value. Every
// candidate under the prefix is scored, so the cost grows with them. Run:
//
//	go test -run '^$' -bench ItemSearchByMeaning -benchtime 20x ./internal/repo/sqlite/
func BenchmarkItemSearchByMeaning(b *testing.B) {
	const items, dims = 10_000, 768
	s := mustOpen(b)
	ctx := context.Background()
	index := &model.ItemIndex{Paths: []string{"text"}}
	for done := 0; done < items; done += 100 {
		writes := make([]model.ItemWrite, 100)
		for j := range writes {
			n := done + j
			writes[j] = model.ItemWrite{Ref: model.ItemRef{UserID: "ann", Namespace: []string{"memories", fmt.Sprint("topic", n%10)}, Key: fmt.Sprint("k", n)},
				Put: model.PutItem{Value: model.Object(fmt.Sprintf(`{"text":"memory %d about something","stars":%d}`, n, n%5)), Index: index, ServerEmbeds: true}}
		}
		if _, err := s.WriteItems(ctx, "t", writes); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	for {
		jobs, err := s.ClaimEmbeddings(ctx, repo.EmbeddingClaim{Tenants: 1, PerTenant: 1000, Lease: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if len(jobs) == 0 {
			break
		}
		out := make([]repo.EmbeddingOutcome, len(jobs))
		for i, j := range jobs {
			out[i] = repo.EmbeddingOutcome{EmbeddingResult: model.EmbeddingResult{Job: j, Model: "bench", Vector: vec()}}
		}
		if err := s.SaveEmbeddings(ctx, out, 6); err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		filter []model.ItemCondition
	}{
		{"all", nil},
		{"filtered", []model.ItemCondition{{Field: "stars", Op: model.OpGte, Values: []model.FilterValue{{Kind: model.ScalarNumber, Num: 3}}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			q := model.ItemSearch{Prefix: []string{"memories"}, Filter: tc.filter, QueryEmbedding: vec(), QueryModel: "bench", Limit: 10}
			for b.Loop() {
				page, err := s.SearchItems(ctx, "t", "ann", q)
				if err != nil || len(page.Data) != 10 || page.Data[0].Score == nil {
					b.Fatalf("%d hits, %v", len(page.Data), err)
				}
			}
		})
	}
}
