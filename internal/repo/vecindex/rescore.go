package vecindex

import (
	"cmp"
	"slices"

	"github.com/viterin/vek/vek32"
)

// Rescore gives hits found elsewhere (pgvector's index, which computes in
// its own order and may return them nearly sorted) the distance TopK would
// give them, to the bit, and TopK's order: a search answers the same ranks
// whichever way it went. vector(i) is hit i's embedding, not normalised.
func Rescore(q []float32, hits []Hit, vector func(i int) []float32) {
	qn := make([]float32, len(q))
	normalise(qn, q)
	vn := make([]float32, len(q))
	for i := range hits {
		v := vector(i)
		if len(v) != len(q) {
			continue
		}
		normalise(vn, v)
		hits[i].Distance = 1 - float64(vek32.Dot(qn, vn))
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(a.Distance, b.Distance), cmp.Compare(b.CreatedAt, a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
}
