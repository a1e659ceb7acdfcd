package postgres_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// BenchmarkPGVectorSearch measures archival search by meaning through
// pgvector's HNSW index: one agent of LOGBOOK_BENCH_PGVECTOR_N passages
// (100,000 by default) of 768 dimensions beside a second agent of a tenth as
// many in the same index, as random Gaussian vectors (the hardest case for a
// graph index) and as clustered ones (as a model's embeddings are). It
// reports the index build, p50/p99 of whole searches (SearchPassages, top
// 10) and recall@10 against exact search. Run:
//
//	go test -run '^$' -bench PGVectorSearch -benchtime 1x -timeout 60m ./internal/repo/postgres/
func BenchmarkPGVectorSearch(b *testing.B) {
	const dims = 768
	n := 100_000
	if s := os.Getenv("LOGBOOK_BENCH_PGVECTOR_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	for _, data := range []string{"random", "clustered"} {
		b.Run(data, func(b *testing.B) {
			ctx := context.Background()
			st := mustOpenPGVector(b, mustDatabase(b), postgres.PGVectorOn)
			r := rand.New(rand.NewPCG(uint64(n), 11))
			gen := randomVector
			if data == "clustered" {
				centers := make([][]float32, 1000)
				for i := range centers {
					centers[i] = randomVector(r, dims, 1)
				}
				gen = func(r *rand.Rand, dims int, _ float64) []float32 {
					c, v := centers[r.IntN(len(centers))], randomVector(r, dims, 0.5)
					for i := range v {
						v[i] += c[i]
					}
					return v
				}
			}
			start := time.Now()
			vecs := benchStorePassages(b, st, r, "a", n, dims, gen)
			benchStorePassages(b, st, r, "b", n/10, dims, gen)
			b.Logf("%s: stored %d passages in %v", data, n+n/10, time.Since(start).Round(time.Millisecond))
			start = time.Now()
			waitVectorIndex(b, st, dims)
			build := time.Since(start)
			// What the generated column costs each insert: the conversion alone.
			var converted int
			start = time.Now()
			if err := postgres.PoolForTest(st).QueryRow(ctx, `SELECT count(logbook_vector_from_f32le(embedding)) FROM passages
				WHERE tenant_id = 't' AND agent_id = 'b'`).Scan(&converted); err != nil {
				b.Fatal(err)
			}
			convert := time.Since(start).Seconds() * 1000 / float64(converted)

			queries := make([][]float32, 200)
			for i := range queries {
				queries[i] = gen(r, dims, 1)
			}
			search := func(q []float32) []string {
				hits, err := st.SearchPassages(ctx, "t", "a", model.PassageSearch{Mode: model.SearchVector, QueryEmbedding: q, Limit: 10})
				if err != nil {
					b.Fatal(err)
				}
				ids := make([]string, len(hits))
				for i, h := range hits {
					ids[i] = h.ID
				}
				return ids
			}
			// Each hnsw.ef_search over the same index: the default's figures
			// are the benchmark's metrics, the others are logged.
			for _, ef := range []int{40, 100, 200, 400} {
				postgres.SetEfSearchForTest(ef)
				found, total := 0, 0
				for _, q := range queries[:50] {
					got := search(q)
					for _, id := range exactTop10(vecs, q) {
						total++
						if slices.Contains(got, id) {
							found++
						}
					}
				}
				lat := make([]float64, 0, len(queries))
				for _, q := range queries {
					t0 := time.Now()
					search(q)
					lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
				}
				slices.Sort(lat)
				p50, p99, recall := lat[len(lat)/2], lat[len(lat)*99/100], float64(found)/float64(total)
				b.Logf("%s, ef_search %d: p50 %.2f ms, p99 %.2f ms, recall@10 %.3f", data, ef, p50, p99, recall)
				if ef == postgres.DefaultEfSearch {
					b.ReportMetric(p50, "p50-ms")
					b.ReportMetric(p99, "p99-ms")
					b.ReportMetric(recall, "recall@10")
				}
			}
			postgres.SetEfSearchForTest(postgres.DefaultEfSearch)
			b.ReportMetric(build.Seconds(), "build-s")
			b.ReportMetric(convert, "convert-ms/vector")
		})
	}
}

// benchStorePassages writes n passages with embeddings for a new agent
// straight through COPY (the generated column and the triggers run as for
// any insert), pinning the agent's model and length, and returns the
// vectors by passage id.
func benchStorePassages(b *testing.B, st *postgres.Store, r *rand.Rand, agent string, n, dims int,
	gen func(*rand.Rand, int, float64) []float32) map[string][]float32 {
	ctx := context.Background()
	if _, err := st.CreateAgent(ctx, "t", model.CreateAgent{ID: agent, Name: agent}); err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, postgres.URLForTest(st))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE agents SET embedding_model = 'bench', embedding_dims = $1 WHERE tenant_id = 't' AND id = $2`, dims, agent); err != nil {
		b.Fatal(err)
	}
	vecs := make(map[string][]float32, n)
	base := int64(model.Now()) - int64(n)
	for done := 0; done < n; {
		batch := min(5000, n-done)
		rows := make([][]any, 0, batch)
		for i := done; i < done+batch; i++ {
			id := fmt.Sprintf("psg_%s_%07d", agent, i)
			v := gen(r, dims, 1)
			vecs[id] = v
			rows = append(rows, []any{"t", agent, id, fmt.Sprintf("passage %d of the benchmark", i), base + int64(i), repo.EncodeVector(v), "ready", "bench"})
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"passages"},
			[]string{"tenant_id", "agent_id", "id", "content", "created_at", "embedding", "embedding_state", "embedding_model"},
			pgx.CopyFromRows(rows)); err != nil {
			b.Fatal(err)
		}
		done += batch
	}
	return vecs
}

// exactTop10 is the true top 10 by cosine similarity, ties as the stores
// break them (the ids encode creation order).
func exactTop10(vecs map[string][]float32, q []float32) []string {
	type scored struct {
		id string
		d  float64
	}
	all := make([]scored, 0, len(vecs))
	for id, v := range vecs {
		all = append(all, scored{id, cosineDistance(q, v)})
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(b.id, a.id)) })
	ids := make([]string, 0, 10)
	for _, s := range all[:min(10, len(all))] {
		ids = append(ids, s.id)
	}
	return ids
}

func cosineDistance(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return 1 - dot/math.Sqrt(na*nb)
}
