package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite/vec" // sqlite-vec, registered on every connection: only these benchmarks use it

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

const benchDims = 768

// BenchmarkVectorSearch compares the ways to answer a top-10 vector search of
// one agent with n passages of 768 numbers, in one SQLite file (both agents,
// 10k and 100k passages, 110k rows, ~350 MB) built once per run:
//
//   - today: Store.SearchPassages as it is, reading and decoding every
//     embedding per query and ranking in Go (float64).
//   - vec_distance_cosine: sqlite-vec's scalar function over the same BLOBs,
//     ORDER BY … LIMIT 10 in SQLite.
//   - vec0: a sqlite-vec virtual table holding the agent's vectors
//     (distance_metric=cosine), KNN with k = 10, joined back to the passages.
//   - cache: the vecindex cache, loaded from this file.
//   - rebuild: loading the cache from this file (read the BLOBs, normalise);
//     heap-B/vector is what the cache keeps once built.
//
// Each reports p50/p99 over timed searches and recall@10 against today's exact
// ranking. Run:
//
//	GOMAXPROCS=1 go test -run '^$' -bench VectorSearch -benchtime 20x -timeout 30m ./internal/repo/sqlite/
func BenchmarkVectorSearch(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 350 MB database")
	}
	s := mustOpen(b)
	ctx := context.Background()
	sizes := []int{10_000, 100_000}
	agents := map[int]string{}
	start := time.Now()
	for _, n := range sizes {
		agents[n] = fmt.Sprintf("agent_%dk", n/1000)
		benchPassages(b, s, agents[n], n)
	}
	b.Logf("fixture: %d passages in %v", 110_000, time.Since(start).Round(time.Millisecond))

	r := rand.New(rand.NewPCG(42, 0))
	queries := make([][]float32, 50)
	for i := range queries {
		queries[i] = make([]float32, benchDims)
		for j := range queries[i] {
			queries[i][j] = float32(r.NormFloat64())
		}
	}
	// today's exact top 10 of the first 10 queries, per agent: what recall is measured against.
	truth := map[int][][]string{}
	today := func(agent string, q []float32) []string {
		hits, err := s.SearchPassages(ctx, "t", agent, model.PassageSearch{Mode: model.SearchVector, QueryEmbedding: q, Limit: 10})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		return ids
	}
	for _, n := range sizes {
		for _, q := range queries[:10] {
			truth[n] = append(truth[n], today(agents[n], q))
		}
	}

	vecDist := func(agent string, q []float32) []string {
		return benchIDs(b)(s.rdb.QueryContext(ctx, `SELECT p.id FROM passages p
			WHERE p.tenant_id = ? AND p.agent_id = ? AND p.embedding IS NOT NULL AND `+passageLive+`
			ORDER BY vec_distance_cosine(p.embedding, ?), p.created_at DESC, p.id DESC LIMIT 10`,
			"t", agent, int64(model.Now()), repo.EncodeVector(q)))
	}
	for _, n := range sizes {
		if err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE VIRTUAL TABLE vec_%s USING vec0(embedding float[%d] distance_metric=cosine)`,
				agents[n], benchDims)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO vec_%s (rowid, embedding) SELECT pk, embedding FROM passages
				WHERE tenant_id = 't' AND agent_id = ?`, agents[n]), agents[n])
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	vec0 := func(agent string, q []float32) []string {
		return benchIDs(b)(s.rdb.QueryContext(ctx, fmt.Sprintf(`SELECT p.id FROM
			(SELECT rowid, distance FROM vec_%s WHERE embedding MATCH ? AND k = 10) v
			JOIN passages p ON p.pk = v.rowid ORDER BY v.distance, p.created_at DESC, p.id DESC`, agent), repo.EncodeVector(q)))
	}

	idx := vecindex.New(vecindex.Config{Load: func(ctx context.Context, tenant, agent string, add func(vecindex.Row) error) error {
		return benchLoadVectors(ctx, s.rdb, tenant, agent, add)
	}})
	cache := func(agent string, q []float32) []string {
		hits, err := idx.TopK(ctx, "t", agent, vecindex.Query{Vector: q, K: 10, Now: model.Now()})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		return ids
	}

	for _, way := range []struct {
		name   string
		search func(agent string, q []float32) []string
	}{{"today", today}, {"vec_distance_cosine", vecDist}, {"vec0", vec0}, {"cache", cache}} {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/n=%dk", way.name, n/1000), func(b *testing.B) {
				agent := agents[n]
				way.search(agent, queries[0]) // warm: page cache, the cache's load
				i := 0
				for b.Loop() {
					way.search(agent, queries[i%len(queries)])
					i++
				}
				b.StopTimer()
				timed := 50
				if way.name != "cache" {
					timed = 20 // the slow ways: 20 searches of up to half a second
				}
				p50, p99, cpu := benchLatencies(timed, func(i int) { way.search(agent, queries[i]) })
				b.ReportMetric(p50, "p50-ms")
				b.ReportMetric(p99, "p99-ms")
				b.ReportMetric(cpu, "cpu-ms/search")
				b.ReportMetric(benchRecall(truth[n], func(i int) []string { return way.search(agent, queries[i]) }), "recall@10")
			})
		}
	}

	b.Run("rebuild/n=100k", func(b *testing.B) {
		b.ReportAllocs() // B/op: all a rebuild allocates, the cache included
		var (
			heap int64
			cpu  time.Duration
		)
		for range b.N {
			x := vecindex.New(vecindex.Config{Load: func(ctx context.Context, tenant, agent string, add func(vecindex.Row) error) error {
				return benchLoadVectors(ctx, s.rdb, tenant, agent, add)
			}})
			b.StopTimer()
			before := benchHeap()
			b.StartTimer()
			c := cpuTime()
			if err := x.Load(ctx, "t", agents[100_000]); err != nil {
				b.Fatal(err)
			}
			cpu += cpuTime() - c
			b.StopTimer()
			heap = benchHeap() - before
			runtime.KeepAlive(x)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/rebuild")
		b.ReportMetric(float64(heap)/100_000, "heap-B/vector")
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/rebuild")
	})
}

// benchPassages stores n passages with random embeddings for a new agent, 2000
// per transaction, and pins the agent's model and dimensions as the first
// passage through the API would.
func benchPassages(b *testing.B, s *Store, agent string, n int) {
	ctx := context.Background()
	if _, err := s.CreateAgent(ctx, "t", model.CreateAgent{ID: agent, Name: agent}); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(n), 7))
	v := make([]float32, benchDims)
	base := int64(model.Now()) - int64(n)
	for done := 0; done < n; {
		batch := min(2000, n-done)
		err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE agents SET embedding_model = 'bench', embedding_dims = ? WHERE tenant_id = 't' AND id = ?`,
				benchDims, agent); err != nil {
				return err
			}
			st, err := tx.PrepareContext(ctx, `INSERT INTO passages (tenant_id, agent_id, id, content, created_at, embedding) VALUES ('t', ?, ?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			defer st.Close()
			for i := done; i < done+batch; i++ {
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
				if _, err := st.ExecContext(ctx, agent, fmt.Sprintf("psg_%s_%07d", agent, i),
					fmt.Sprintf("passage %d of the benchmark", i), base+int64(i), repo.EncodeVector(v)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		done += batch
	}
}

// benchLoadVectors is the cache's loader: the agent's live passages with an
// embedding, each decoded into one reused buffer (the index copies it).
func benchLoadVectors(ctx context.Context, db *sql.DB, tenant, agent string, add func(vecindex.Row) error) error {
	rows, err := db.QueryContext(ctx, `SELECT p.id, p.created_at, p.expires_at, p.embedding FROM passages p
		WHERE p.tenant_id = ? AND p.agent_id = ? AND p.embedding IS NOT NULL AND `+passageLive, tenant, agent, int64(model.Now()))
	if err != nil {
		return err
	}
	defer rows.Close()
	var buf []float32
	for rows.Next() {
		var (
			r   vecindex.Row
			exp sql.NullInt64
			b   sql.RawBytes
		)
		if err := rows.Scan(&r.ID, &r.CreatedAt, &exp, &b); err != nil {
			return err
		}
		if cap(buf) < len(b)/4 {
			buf = make([]float32, len(b)/4)
		}
		buf = buf[:len(b)/4]
		for i := range buf {
			buf[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		r.ExpiresAt, r.Vector = model.Time(exp.Int64), buf
		if err := add(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// benchIDs reads a query's one column of ids: benchIDs(b)(db.Query(…)).
func benchIDs(b *testing.B) func(*sql.Rows, error) []string {
	return func(rows *sql.Rows, err error) []string {
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		return ids
	}
}

// benchRecall is the share of the true top 10s that search(i) finds.
func benchRecall(truth [][]string, search func(i int) []string) float64 {
	found, total := 0, 0
	for i, want := range truth {
		got := search(i)
		for _, id := range want {
			total++
			if slices.Contains(got, id) {
				found++
			}
		}
	}
	return float64(found) / float64(total)
}

// benchLatencies times n calls of f one by one: their p50 and p99 in ms (wall
// clock: on a busy machine that includes waiting for a core), and the process's
// CPU time per call in ms (the work itself, GC included; with GOMAXPROCS=1 the
// search's alone).
func benchLatencies(n int, f func(i int)) (p50, p99, cpu float64) {
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

func benchHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
