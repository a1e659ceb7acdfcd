package vecindex_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// BenchmarkTopK is a top-10 search of one agent's n vectors of 768 numbers
// (random, seeded). Beside ns/op it reports the p50 and p99 of 200 searches
// timed one by one, recall@10 against repo.RankByVector over 10 of them (1.0:
// the search is exact), and the bytes per vector the index counts and that the
// heap really grew by. Run with GOMAXPROCS=1 for the one-core figure:
//
//	GOMAXPROCS=1 go test -run '^$' -bench TopK -benchtime 200x ./internal/repo/vecindex/
func BenchmarkTopK(b *testing.B) {
	const dims = 768
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%dk", n/1000), func(b *testing.B) {
			rows := randomRows(uint64(n), n, dims)
			held := rows
			x := vecindex.New(vecindex.Config{Load: func(_ context.Context, _, _ string, add func(vecindex.Row) error) error {
				return addAll(add, held)
			}})
			before := heapBytes()
			if err := x.Load(context.Background(), "t", "a"); err != nil {
				b.Fatal(err)
			}
			held = nil
			heap := heapBytes() - before
			r := rand.New(rand.NewPCG(42, 0))
			queries := make([][]float32, 200)
			for i := range queries {
				queries[i] = randomVector(r, dims)
			}
			search := func(q []float32) []vecindex.Hit {
				hits, err := x.TopK(context.Background(), "t", "a", vecindex.Query{Vector: q, K: 10, Now: model.Now()})
				if err != nil {
					b.Fatal(err)
				}
				return hits
			}

			i := 0
			for b.Loop() {
				search(queries[i%len(queries)])
				i++
			}

			b.StopTimer()
			p50, p99, cpu := latencies(len(queries), func(i int) { search(queries[i]) })
			found := 0
			for _, q := range queries[:10] {
				want := exact(q, rows)[:10]
				in := map[string]bool{}
				for _, h := range want {
					in[h.ID] = true
				}
				for _, h := range search(q) {
					if in[h.ID] {
						found++
					}
				}
			}
			st := x.Stats()
			b.ReportMetric(p50, "p50-ms")
			b.ReportMetric(p99, "p99-ms")
			b.ReportMetric(cpu, "cpu-ms/search")
			b.ReportMetric(float64(found)/100, "recall@10")
			b.ReportMetric(float64(st.Bytes)/float64(st.Vectors), "counted-B/vector")
			b.ReportMetric(float64(heap)/float64(n), "heap-B/vector")
			runtime.KeepAlive(rows)
		})
	}
}

// latencies times n calls of f one by one: their p50 and p99 in ms (wall
// clock: on a busy machine that includes waiting for a core), and the process's
// CPU time per call in ms (the work itself, GC included; with GOMAXPROCS=1 the
// search's alone).
func latencies(n int, f func(i int)) (p50, p99, cpu float64) {
	ms := make([]float64, n)
	before := cpuTime()
	for i := range ms {
		t := time.Now()
		f(i)
		ms[i] = float64(time.Since(t).Microseconds()) / 1000
	}
	cpu = float64((cpuTime() - before).Microseconds()) / 1000 / float64(n)
	slices.Sort(ms)
	return ms[n*50/100], ms[min(n-1, n*99/100)], cpu
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapBytes() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
