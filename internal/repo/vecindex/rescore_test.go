package vecindex_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/logbook/logbook/internal/repo/vecindex"
)

// Hits found elsewhere, in any order, come out of Rescore with TopK's
// distances to the bit and in TopK's order.
func TestRescoreGivesTopKsDistancesAndOrder(t *testing.T) {
	rows := randomRows(9, 500, 48)
	rows[7].Vector = slices.Clone(rows[3].Vector) // a tie, broken as TopK breaks it
	rows[7].CreatedAt = rows[3].CreatedAt
	ix, _ := staticIndex(map[string][]vecindex.Row{"t/a": rows})
	r := rand.New(rand.NewPCG(4, 4))
	byID := map[string][]float32{}
	for _, row := range rows {
		byID[row.ID] = row.Vector
	}
	for range 20 {
		q := randomVector(r, 48)
		want, err := ix.TopK(context.Background(), "t", "a", vecindex.Query{Vector: q, K: 25})
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Clone(want)
		r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		for i := range got {
			got[i].Distance = 0.5 // whatever the other path said
		}
		vecindex.Rescore(q, got, func(i int) []float32 { return byID[got[i].ID] })
		if !slices.Equal(got, want) {
			t.Fatalf("rescored %v\nwant %v", got, want)
		}
	}
}
