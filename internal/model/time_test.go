package model

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The hand-written rendering is byte for byte time's own layout, also at the
// edges of the four-digit years it handles and past them, where it defers.
func TestTimeAppendTextMatchesTheLayout(t *testing.T) {
	edges := []int64{0, -1, 1, 999, -999, 1000, -62135596800000, -62135596800001, 253402300799999, 253402300800000,
		951782400000 /* 2000-02-29 */, 1798761599999 /* 2026-12-31T23:59:59.999 */}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 20000 {
		edges = append(edges, rng.Int64N(253402300800000*2)-253402300800000)
	}
	for _, ms := range edges {
		want := time.UnixMilli(ms).UTC().Format(timeLayout)
		if got := string(Time(ms).AppendText(nil)); got != want {
			t.Fatalf("Time(%d).AppendText = %s, want %s", ms, got, want)
		}
	}
}
