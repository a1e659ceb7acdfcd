package vecindex_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// randomRows makes n rows of dims numbers from a seeded source, with ids and
// times in a fixed order so that tests can rebuild the same candidates.
func randomRows(seed uint64, n, dims int) []vecindex.Row {
	r := rand.New(rand.NewPCG(seed, 1))
	rows := make([]vecindex.Row, n)
	for i := range rows {
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		rows[i] = vecindex.Row{ID: fmt.Sprintf("psg_%06d", i), CreatedAt: model.Time(1_000_000 + r.IntN(1000)), Vector: v}
	}
	return rows
}

func randomVector(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	return v
}

// exact ranks rows the way the stores do today: repo.RankByVector, float64.
func exact(q []float32, rows []vecindex.Row) []model.PassageHit {
	cands := make([]repo.VectorCandidate, len(rows))
	for i, r := range rows {
		cands[i] = repo.VectorCandidate{Passage: model.Passage{ID: r.ID, CreatedAt: r.CreatedAt}, Embedding: r.Vector}
	}
	return repo.RankByVector(q, cands)
}

func staticIndex(rows map[string][]vecindex.Row) (*vecindex.Index, *atomic.Int64) {
	var loads atomic.Int64
	return vecindex.New(vecindex.Config{Load: func(_ context.Context, tenant, agent string, add func(vecindex.Row) error) error {
		loads.Add(1)
		return addAll(add, rows[tenant+"/"+agent])
	}}), &loads
}

func addAll(add func(vecindex.Row) error, rows []vecindex.Row) error {
	for _, r := range rows {
		if err := add(r); err != nil {
			return err
		}
	}
	return nil
}

func mustTopK(t testing.TB, x *vecindex.Index, tenant, agent string, q vecindex.Query) []vecindex.Hit {
	t.Helper()
	hits, err := x.TopK(context.Background(), tenant, agent, q)
	if err != nil {
		t.Fatalf("TopK: %v", err)
	}
	return hits
}

func ids(hits []vecindex.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// compare checks got against the exact ranking: same distances at each
// position (float32 precision), the same ids wherever the exact distances are
// apart by more than that precision (a near tie may go either way).
func compare(t *testing.T, got []vecindex.Hit, want []model.PassageHit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d hits, want %d", len(got), len(want))
	}
	const eps = 1e-5
	for j := range got {
		if d := math.Abs(got[j].Distance - want[j].Rank); d > eps {
			t.Fatalf("hit %d: distance %v, want %v", j, got[j].Distance, want[j].Rank)
		}
		apart := (j == 0 || want[j].Rank-want[j-1].Rank > eps) && (j == len(want)-1 || want[j+1].Rank-want[j].Rank > eps)
		if apart && got[j].ID != want[j].ID {
			t.Fatalf("hit %d: %s, want %s", j, got[j].ID, want[j].ID)
		}
	}
}

func TestTopKMatchesRankByVector(t *testing.T) {
	for _, dims := range []int{3, 64, 768} {
		t.Run(fmt.Sprintf("dims=%d", dims), func(t *testing.T) {
			rows := randomRows(uint64(dims), 3000, dims)
			x, _ := staticIndex(map[string][]vecindex.Row{"t/a": rows})
			r := rand.New(rand.NewPCG(7, uint64(dims)))
			recalled, total := 0, 0
			for range 20 {
				q := randomVector(r, dims)
				want := exact(q, rows)
				compare(t, mustTopK(t, x, "t", "a", vecindex.Query{Vector: q, K: 10}), want[:10])
				compare(t, mustTopK(t, x, "t", "a", vecindex.Query{Vector: q, K: -1}), want)
				got := mustTopK(t, x, "t", "a", vecindex.Query{Vector: q, K: 10})
				in := map[string]bool{}
				for _, h := range want[:10] {
					in[h.ID] = true
				}
				for _, h := range got {
					if in[h.ID] {
						recalled++
					}
				}
				total += 10
			}
			if recalled != total {
				t.Fatalf("recall@10 = %d/%d, want 1.0: the search is exact", recalled, total)
			}
		})
	}
}

// Equal similarities order as RankByVector: newest first, then id descending.
func TestTopKTies(t *testing.T) {
	v := []float32{1, 2, 3}
	rows := []vecindex.Row{
		{ID: "psg_a", CreatedAt: 10, Vector: v},
		{ID: "psg_b", CreatedAt: 20, Vector: []float32{2, 4, 6}}, // same direction
		{ID: "psg_c", CreatedAt: 20, Vector: v},
		{ID: "psg_d", CreatedAt: 5, Vector: []float32{3, 2, 1}},
		{ID: "psg_e", CreatedAt: 30, Vector: []float32{0, 0, 0}}, // zero: similarity 0
		{ID: "psg_f", CreatedAt: 30, Vector: []float32{-1, -2, -3}},
	}
	x, _ := staticIndex(map[string][]vecindex.Row{"t/a": rows})
	for _, k := range []int{1, 2, 3, 4, 6, -1} {
		want := exact(v, rows)
		if k > 0 {
			want = want[:k]
		}
		got := mustTopK(t, x, "t", "a", vecindex.Query{Vector: v, K: k})
		var wantIDs []string
		for _, h := range want {
			wantIDs = append(wantIDs, h.ID)
		}
		if fmt.Sprint(ids(got)) != fmt.Sprint(wantIDs) {
			t.Fatalf("k=%d: %v, want %v", k, ids(got), wantIDs)
		}
	}
	// And a zero query: every row at distance 1, newest first.
	got := mustTopK(t, x, "t", "a", vecindex.Query{Vector: []float32{0, 0, 0}, K: -1})
	if want := "[psg_f psg_e psg_c psg_b psg_a psg_d]"; fmt.Sprint(ids(got)) != want || got[0].Distance != 1 {
		t.Fatalf("zero query: %v (%v), want %s at distance 1", ids(got), got[0].Distance, want)
	}
}

func TestTopKFilters(t *testing.T) {
	rows := randomRows(3, 500, 16)
	for i := range rows {
		if i%3 == 0 {
			rows[i].ExpiresAt = model.Time(2000 + i)
		}
	}
	x, _ := staticIndex(map[string][]vecindex.Row{"t/a": rows})
	q := randomVector(rand.New(rand.NewPCG(1, 2)), 16)
	after, before, now := model.Time(1_000_200), model.Time(1_000_800), model.Time(2250)
	allow := func(id string) bool { return id[len(id)-1] != '7' }
	var keep []vecindex.Row
	for i, r := range rows {
		live := r.ExpiresAt == 0 || r.ExpiresAt > now
		if live && r.CreatedAt >= after && r.CreatedAt <= before && allow(r.ID) {
			keep = append(keep, rows[i])
		}
	}
	if len(keep) < 100 || len(keep) > 400 {
		t.Fatalf("%d rows pass the filters: the test filters too little or too much", len(keep))
	}
	got := mustTopK(t, x, "t", "a", vecindex.Query{Vector: q, K: -1, Now: now, After: &after, Before: &before, Allow: allow})
	compare(t, got, exact(q, keep))
	// Now 0 hides nothing.
	if got := mustTopK(t, x, "t", "a", vecindex.Query{Vector: q, K: -1}); len(got) != len(rows) {
		t.Fatalf("without filters %d hits, want %d", len(got), len(rows))
	}
}

func TestAddRemoveGet(t *testing.T) {
	x, loads := staticIndex(map[string][]vecindex.Row{"t/a": {{ID: "p1", CreatedAt: 1, Vector: []float32{3, 4}}}})
	ctx := context.Background()

	// Writes to an agent not loaded are left to the loader.
	if err := x.Add("t", "a", vecindex.Row{ID: "p9", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := x.Version("t", "a"); ok {
		t.Fatal("agent loaded by an Add")
	}
	if err := x.Load(ctx, "t", "a"); err != nil {
		t.Fatal(err)
	}
	if _, ok := x.Get("t", "a", "p9"); ok {
		t.Fatal("p9, added before the load, is in the index: the loader did not return it")
	}
	r, ok := x.Get("t", "a", "p1")
	if !ok || r.Vector[0] != 0.6 || r.Vector[1] != 0.8 || r.CreatedAt != 1 {
		t.Fatalf("Get p1 = %+v %v, want the vector normalised to [0.6 0.8]", r, ok)
	}
	v0, _ := x.Version("t", "a")

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(x.Add("t", "a", vecindex.Row{ID: "p2", CreatedAt: 2, Vector: []float32{0, 1}},
		vecindex.Row{ID: "p3", CreatedAt: 3, Vector: []float32{1, 0}}))
	must(x.Add("t", "a", vecindex.Row{ID: "p1", CreatedAt: 1, Vector: []float32{-1, 0}})) // replaces
	if got := ids(mustTopK(t, x, "t", "a", vecindex.Query{Vector: []float32{1, 0}, K: -1})); fmt.Sprint(got) != "[p3 p2 p1]" {
		t.Fatalf("after adds: %v, want [p3 p2 p1]", got)
	}
	x.Remove("t", "a", "p3", "nope")
	if got := ids(mustTopK(t, x, "t", "a", vecindex.Query{Vector: []float32{1, 0}, K: -1})); fmt.Sprint(got) != "[p2 p1]" {
		t.Fatalf("after remove: %v, want [p2 p1]", got)
	}
	if r, ok := x.Get("t", "a", "p1"); !ok || r.Vector[0] != -1 {
		t.Fatalf("p1 after the remove moved rows: %+v", r)
	}
	if v1, _ := x.Version("t", "a"); v1 != v0+4 {
		t.Fatalf("version %d, want %d (+3 adds, +1 remove)", v1, v0+4)
	}
	if err := x.Add("t", "a", vecindex.Row{ID: "p4", Vector: []float32{1, 2, 3}}); !errors.Is(err, vecindex.ErrDims) {
		t.Fatalf("Add of 3 numbers to a 2-number agent: %v, want ErrDims", err)
	}
	if _, err := x.TopK(ctx, "t", "a", vecindex.Query{Vector: []float32{1}, K: 1}); !errors.Is(err, vecindex.ErrDims) {
		t.Fatalf("query of 1 number: %v, want ErrDims", err)
	}
	if st := x.Stats(); st.Agents != 1 || st.Vectors != 2 || st.Bytes != 2*vecindex.BytesPerVector(2, 2) {
		t.Fatalf("Stats = %+v, want 1 agent, 2 vectors, %d bytes", st, 2*vecindex.BytesPerVector(2, 2))
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}

	// Another tenant's agent of the same id is another agent.
	if got := mustTopK(t, x, "u", "a", vecindex.Query{Vector: []float32{1, 0}, K: 10}); len(got) != 0 {
		t.Fatalf("tenant u sees %v", ids(got))
	}

	x.Invalidate("t", "a")
	if st := x.Stats(); st.Bytes != 0 || st.Agents != 1 { // u/a, empty
		t.Fatalf("after Invalidate: %+v, want 0 bytes and only u/a", st)
	}
	if got := ids(mustTopK(t, x, "t", "a", vecindex.Query{Vector: []float32{1, 0}, K: -1})); fmt.Sprint(got) != "[p1]" {
		t.Fatalf("reloaded: %v, want the loader's [p1]", got)
	}
	if n := loads.Load(); n != 3 { // t/a twice, u/a once
		t.Fatalf("%d loads, want 3", n)
	}
}

// Writes made while an agent loads are replayed over what the loader read, in
// order; searches waiting for the load share it.
func TestWritesDuringLoad(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var loads atomic.Int64
	x := vecindex.New(vecindex.Config{Load: func(ctx context.Context, _, _ string, add func(vecindex.Row) error) error {
		if loads.Add(1) == 1 {
			close(started)
		}
		<-release
		// The snapshot has p1 and p2 (p2 committed before it was read).
		return addAll(add, []vecindex.Row{{ID: "p1", Vector: []float32{1, 0}}, {ID: "p2", Vector: []float32{0, 1}}})
	}})
	var wg sync.WaitGroup
	results := make([][]string, 4)
	for i := range results {
		wg.Go(func() {
			hits, err := x.TopK(context.Background(), "t", "a", vecindex.Query{Vector: []float32{1, 0}, K: -1})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = ids(hits)
		})
	}
	<-started
	_ = x.Add("t", "a", vecindex.Row{ID: "p2", Vector: []float32{0, 1}}) // also in the snapshot
	_ = x.Add("t", "a", vecindex.Row{ID: "p3", Vector: []float32{1, 1}}) // after it
	x.Remove("t", "a", "p1")
	_ = x.Add("t", "a", vecindex.Row{ID: "p4", Vector: []float32{-1, 0}})
	x.Remove("t", "a", "p4")
	if _, ok := x.Get("t", "a", "p3"); ok {
		t.Error("Get answered from an agent still loading")
	}
	close(release)
	wg.Wait()
	for i, got := range results {
		if fmt.Sprint(got) != "[p3 p2]" {
			t.Fatalf("search %d: %v, want [p3 p2]", i, got)
		}
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}
}

func TestLoadErrorsAndInvalidateDuringLoad(t *testing.T) {
	fail := errors.New("disk on fire")
	var calls atomic.Int64
	block := make(chan struct{})
	x := vecindex.New(vecindex.Config{Load: func(ctx context.Context, _, agent string, add func(vecindex.Row) error) error {
		n := calls.Add(1)
		switch {
		case agent == "bad" && n == 1:
			return fail
		case agent == "slow" && n == 3:
			<-block
			return add(vecindex.Row{ID: "old", Vector: []float32{1}})
		}
		return add(vecindex.Row{ID: "new", Vector: []float32{1}})
	}})
	ctx := context.Background()
	if _, err := x.TopK(ctx, "t", "bad", vecindex.Query{Vector: []float32{1}, K: 1}); !errors.Is(err, fail) {
		t.Fatalf("first search: %v, want the loader's error", err)
	}
	if got := mustTopK(t, x, "t", "bad", vecindex.Query{Vector: []float32{1}, K: 1}); fmt.Sprint(ids(got)) != "[new]" {
		t.Fatalf("second search: %v, want a new load", ids(got))
	}

	// A load that an Invalidate overtakes is thrown away: its waiters load anew.
	done := make(chan []string)
	go func() {
		hits, err := x.TopK(ctx, "t", "slow", vecindex.Query{Vector: []float32{1}, K: 1})
		if err != nil {
			t.Error(err)
		}
		done <- ids(hits)
	}()
	for calls.Load() < 3 {
		runtime.Gosched()
	}
	x.Invalidate("t", "slow")
	close(block)
	if got := <-done; fmt.Sprint(got) != "[new]" {
		t.Fatalf("search across an Invalidate: %v, want [new] from a second load", got)
	}
	if st := x.Stats(); st.Bytes != 2*vecindex.BytesPerVector(1, 3) {
		t.Fatalf("bytes %d, want two agents of one row", st.Bytes)
	}

	// A cancelled search stops waiting.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := x.TopK(cctx, "t", "other", vecindex.Query{Vector: []float32{1}, K: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled search: %v", err)
	}
}

func TestEvictsLeastRecentlySearched(t *testing.T) {
	per := vecindex.BytesPerVector(4, 2)
	x := vecindex.New(vecindex.Config{MaxBytes: 2 * 10 * per, Load: func(_ context.Context, _, _ string, add func(vecindex.Row) error) error {
		rows := randomRows(1, 10, 4)
		for i := range rows {
			rows[i].ID = fmt.Sprintf("%02d", i)
		}
		return addAll(add, rows)
	}})
	q := vecindex.Query{Vector: []float32{1, 0, 0, 0}, K: 1}
	mustTopK(t, x, "t", "a", q)
	mustTopK(t, x, "t", "b", q)
	mustTopK(t, x, "t", "a", q) // b is now the least recent
	mustTopK(t, x, "t", "c", q)
	if _, ok := x.Version("t", "b"); ok {
		t.Fatal("b kept, want it evicted")
	}
	for _, a := range []string{"a", "c"} {
		if _, ok := x.Version("t", a); !ok {
			t.Fatalf("%s evicted", a)
		}
	}
	if st := x.Stats(); st.Bytes != 2*10*per || st.Agents != 2 {
		t.Fatalf("Stats %+v, want 2 agents within the bound", st)
	}
	// a, b, c loaded; a found loaded once; b evicted.
	if st := x.Stats(); st.Misses != 3 || st.Hits != 1 || st.Evictions != 1 {
		t.Errorf("Stats %+v, want 3 misses, 1 hit, 1 eviction", st)
	}
	mustTopK(t, x, "t", "b", q) // back in, c or a out
	if st := x.Stats(); st.Misses != 4 || st.Hits != 1 || st.Evictions != 2 {
		t.Errorf("Stats %+v, want 4 misses, 1 hit, 2 evictions", st)
	}
}

// Searches run beside a writer; go test -race checks the locking, and every
// search must see a consistent agent (no row twice, distances ordered).
func TestConcurrentSearchesAndWrites(t *testing.T) {
	rows := randomRows(9, 2000, 32)
	x, _ := staticIndex(map[string][]vecindex.Row{"t/a": rows[:1000]})
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 0))
			for {
				select {
				case <-stop:
					return
				default:
				}
				hits, err := x.TopK(ctx, "t", "a", vecindex.Query{Vector: randomVector(r, 32), K: 20})
				if err != nil {
					t.Error(err)
					return
				}
				seen := map[string]bool{}
				for j, h := range hits {
					if seen[h.ID] || (j > 0 && h.Distance < hits[j-1].Distance) {
						t.Errorf("inconsistent hits %v", ids(hits))
						return
					}
					seen[h.ID] = true
				}
			}
		})
	}
	for i := 1000; i < 2000; i++ {
		if err := x.Add("t", "a", rows[i]); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			x.Remove("t", "a", rows[i-500].ID)
		}
		if i%250 == 0 {
			x.Invalidate("t", "a")
		}
	}
	close(stop)
	wg.Wait()
}

// Removes move the last row into the hole, across the chunks vectors are kept
// in; what is left must still rank as the exact search does.
func TestRemoveAcrossChunks(t *testing.T) {
	rows := randomRows(5, 2100, 8)
	x, _ := staticIndex(map[string][]vecindex.Row{"t/a": rows})
	if err := x.Load(context.Background(), "t", "a"); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	var left []vecindex.Row
	for _, row := range rows {
		if r.IntN(3) == 0 && row.ID != "psg_002099" {
			left = append(left, row)
		} else {
			x.Remove("t", "a", row.ID)
		}
	}
	x.Remove("t", "a", "psg_002099") // the last row of the last chunk
	q := randomVector(r, 8)
	compare(t, mustTopK(t, x, "t", "a", vecindex.Query{Vector: q, K: -1}), exact(q, left))
	for _, row := range rows[:1500] { // and grow again past a chunk
		if err := x.Add("t", "a", row); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, row := range append(left, rows[:1500]...) {
		seen[row.ID] = true
	}
	var all []vecindex.Row
	for _, row := range rows {
		if seen[row.ID] {
			all = append(all, row)
		}
	}
	compare(t, mustTopK(t, x, "t", "a", vecindex.Query{Vector: q, K: -1}), exact(q, all))
	if st := x.Stats(); st.Vectors != len(all) {
		t.Fatalf("%d vectors, want %d", st.Vectors, len(all))
	}
}
