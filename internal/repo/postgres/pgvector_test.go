package postgres_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/migrations"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// mustOpenPGVector opens a store on url in mode, once requirePGVector has
// found pgvector on the server.
func mustOpenPGVector(t testing.TB, url string, mode postgres.PGVector) *postgres.Store {
	t.Helper()
	requirePGVector(t, url)
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, PGVector: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if on, why := st.PGVectorInUse(); mode != postgres.PGVectorOff && !on {
		t.Fatalf("pgvector is available but not in use: %v", why)
	}
	return st
}

// requirePGVector skips t, saying why and where the test does run, when the
// PostgreSQL these tests started has no pgvector 0.8 or later to create; a
// run that has it and must test it sets LOGBOOK_TEST_PGVECTOR=1, which turns
// the skip into a failure. (Debian 12, where make test runs, does not
// package pgvector; the in-memory search these tests compare against is
// tested everywhere.)
func requirePGVector(t testing.TB, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, `SELECT coalesce((SELECT default_version FROM pg_available_extensions
		WHERE name = 'vector'), '')`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	var why string
	switch {
	case version == "":
		why = "pgvector is not installed in this PostgreSQL"
	case !postgres.PGVectorAtLeastForTest(version, 0, 8):
		why = fmt.Sprintf("this PostgreSQL has pgvector %s, and Logbook needs 0.8 or later", version)
	default:
		return
	}
	bin, _ := pgtest.BinDir()
	why = fmt.Sprintf("%s (%s): the pgvector search is tested where the PostgreSQL these tests start has it, "+
		"such as inside the pgvector/pgvector:0.8.1-pg15 image of docker-compose.yml, or with LOGBOOK_PG_BIN "+
		"naming the bin directory of a PostgreSQL with the extension (the postgresql-15-pgvector package of "+
		"the PostgreSQL project's apt repository, or pgvector built from source)", why, bin)
	if os.Getenv("LOGBOOK_TEST_PGVECTOR") != "" {
		t.Fatalf("LOGBOOK_TEST_PGVECTOR is set, but %s", why)
	}
	t.Skip(why)
}

// waitVectorIndex waits until the background build of the HNSW index for
// dims is done.
func waitVectorIndex(t testing.TB, st *postgres.Store, dims int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); !postgres.VectorIndexReadyForTest(context.Background(), st, dims); {
		if time.Now().After(deadline) {
			t.Fatalf("the HNSW index for %d dimensions was not built", dims)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The generated column holds exactly the float32s the embedding column's
// bytes say, for every kind of float32 an embedding can carry.
func TestPGVectorColumnMatchesEmbedding(t *testing.T) {
	ctx := context.Background()
	st := mustOpenPGVector(t, mustDatabase(t), postgres.PGVectorOn)
	if _, err := st.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	v := []float32{0, 1, -1, 0.1, -2.5e-3, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
		1.17549435e-38 /* smallest normal */, 3.4e-39 /* subnormal */, 123456.789, float32(math.Pi), float32(math.Copysign(0, -1))}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		v = append(v, float32(r.NormFloat64()*math.Pow(10, float64(r.IntN(20)-10))))
	}
	p, err := st.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "c", Embedding: v, EmbeddingModel: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var got []float32
	if err := postgres.PoolForTest(st).QueryRow(ctx, `SELECT embedding_vec::real[] FROM passages WHERE id = $1`, p.ID).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(v) {
		t.Fatalf("%d values, want %d", len(got), len(v))
	}
	for i := range v {
		if math.Float32bits(got[i]) != math.Float32bits(v[i]) && !(got[i] == 0 && v[i] == 0) {
			t.Errorf("value %d: %g (%08x), want %g (%08x)", i, got[i], math.Float32bits(got[i]), v[i], math.Float32bits(v[i]))
		}
	}
}

// Search through pgvector's HNSW index finds what exact search finds: at
// least 95% of each true top 10 on clustered vectors (as a model's
// embeddings are), with another agent's vectors in the same index, and the
// filters (tags, dates, expiry) and writes after the build respected.
func TestPGVectorSearchAgreesWithExact(t *testing.T) {
	const dims, n, other, queries = 64, 3000, 1500, 40
	ctx := context.Background()
	url := mustDatabase(t)
	pg := mustOpenPGVector(t, url, postgres.PGVectorOn)
	exact := mustOpenPGVector(t, url, postgres.PGVectorOff)
	r := rand.New(rand.NewPCG(3, 4))
	centers := make([][]float32, 40)
	for i := range centers {
		centers[i] = randomVector(r, dims, 1)
	}
	near := func() []float32 {
		c, v := centers[r.IntN(len(centers))], randomVector(r, dims, 0.35)
		for i := range v {
			v[i] += c[i]
		}
		return v
	}
	for _, agent := range []string{"a", "b"} {
		if _, err := pg.CreateAgent(ctx, "t", model.CreateAgent{ID: agent, Name: agent}); err != nil {
			t.Fatal(err)
		}
	}
	add := func(agent string, in model.CreatePassage) model.Passage {
		t.Helper()
		in.Embedding, in.EmbeddingModel = near(), "m"
		p, err := pg.CreatePassage(ctx, "t", agent, in)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var mid model.Time
	for i := range n {
		if i == n/2 {
			time.Sleep(2 * time.Millisecond)
			mid = model.Now()
			time.Sleep(2 * time.Millisecond)
		}
		in := model.CreatePassage{Content: fmt.Sprint("passage ", i)}
		if i%10 == 0 {
			in.Tags = []string{"tenth"}
		}
		add("a", in)
	}
	for i := range other {
		add("b", model.CreatePassage{Content: fmt.Sprint("other ", i)})
	}
	waitVectorIndex(t, pg, dims)

	ranks := map[string]float64{} // every rank either store gave, which must agree
	search := func(st *postgres.Store, in model.PassageSearch) []string {
		t.Helper()
		in.Mode, in.Limit = model.SearchVector, 10
		hits, err := st.SearchPassages(ctx, "t", "a", in)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
			if r, ok := ranks[h.ID]; ok && r != h.Rank {
				t.Fatalf("%s ranks %v one way and %v the other", h.ID, r, h.Rank)
			}
			ranks[h.ID] = h.Rank
			if i > 0 && hits[i-1].Rank > h.Rank {
				t.Fatalf("hits out of order: %v then %v", hits[i-1].Rank, h.Rank)
			}
		}
		return ids
	}
	recall := func(name string, in model.PassageSearch) {
		t.Helper()
		found, total := 0, 0
		for range queries {
			in.QueryEmbedding = near()
			clear(ranks)
			want, got := search(exact, in), search(pg, in)
			if len(got) != len(want) {
				t.Fatalf("%s: %d hits through pgvector, %d exact", name, len(got), len(want))
			}
			for _, id := range want {
				total++
				if slices.Contains(got, id) {
					found++
				}
			}
		}
		rec := float64(found) / float64(total)
		t.Logf("%s: recall@10 %.3f", name, rec)
		if rec < 0.95 {
			t.Errorf("%s: recall@10 %.3f, want at least 0.95", name, rec)
		}
	}
	// Queries pgvector cannot rank by (the zero vector, numbers whose squares
	// overflow its float32s) are answered as the in-memory search answers them.
	for _, q := range [][]float32{make([]float32, dims), slices.Repeat([]float32{3e30}, dims)} {
		if got, want := search(pg, model.PassageSearch{QueryEmbedding: q}), search(exact, model.PassageSearch{QueryEmbedding: q}); !slices.Equal(got, want) {
			t.Errorf("query %v…: %v, exact %v", q[:2], got, want)
		}
	}
	clear(ranks)
	recall("all", model.PassageSearch{})
	recall("tagged", model.PassageSearch{Tags: []string{"tenth"}})
	recall("before", model.PassageSearch{Before: &mid})
	recall("after", model.PassageSearch{After: &mid})
	// The index answered them, not a scan of the table (the statistics
	// reach the view within a second or so of each search).
	for deadline := time.Now().Add(10 * time.Second); ; {
		var scans int64
		if err := postgres.PoolForTest(pg).QueryRow(ctx, `SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes
			WHERE indexrelname = 'passages_embedding_hnsw_64'`).Scan(&scans); err != nil {
			t.Fatal(err)
		}
		if scans > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the HNSW index was never scanned: the searches did not use pgvector's index")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A passage stored after the build is found; one that has expired is not.
	time.Sleep(2 * time.Millisecond)
	since := model.Now()
	q := near()
	fresh := add("a", model.CreatePassage{Content: "fresh"})
	expires := model.Now() + 1 // ms
	if _, err := pg.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "gone", Embedding: q, EmbeddingModel: "m", ExpiresAt: &expires}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if hits := search(pg, model.PassageSearch{QueryEmbedding: q, After: &since}); !slices.Equal(hits, []string{fresh.ID}) {
		t.Errorf("search since the build = %v, want only %s (stored after it; the other has expired)", hits, fresh.ID)
	}
}

// A database that had passages before pgvector was installed gets the
// column on the next Open, computed for the passages already there.
func TestPGVectorAddedToExistingDatabase(t *testing.T) {
	ctx := context.Background()
	if missing != nil {
		t.Skip(missing)
	}
	conn, err := pgx.Connect(ctx, cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("bare%d", databases.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	url := cluster.URL(name)
	if err := postgres.Migrate(ctx, url, "up", io.Discard); err != nil {
		t.Fatal(err)
	}
	before := mustOpenPGVector(t, url, postgres.PGVectorOff)
	if _, err := before.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]float32{}
	for i := range 20 {
		v := []float32{float32(i), 1, -0.5}
		p, err := before.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: fmt.Sprint(i), Embedding: v, EmbeddingModel: "m"})
		if err != nil {
			t.Fatal(err)
		}
		want[p.ID] = v
	}
	before.Close()
	after := mustOpenPGVector(t, url, postgres.PGVectorOn)
	for id, v := range want {
		var got []float32
		if err := postgres.PoolForTest(after).QueryRow(ctx, `SELECT embedding_vec::real[] FROM passages WHERE id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, v) {
			t.Errorf("%s: embedding_vec %v, want %v", id, got, v)
		}
	}
	waitVectorIndex(t, after, 3)
	hits, err := after.SearchPassages(ctx, "t", "a", model.PassageSearch{Mode: model.SearchVector, QueryEmbedding: []float32{19, 1, -0.5}, Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Content != "19" {
		t.Fatalf("search after the upgrade = %+v, %v", hits, err)
	}
	// Down removes the column with the embeddings it comes from.
	after.Close()
	steps, err := fs.Glob(migrations.Postgres, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for range steps {
		if err := postgres.Migrate(ctx, url, "down", io.Discard); err != nil {
			t.Fatal(err)
		}
	}
}

// Two processes that first search together build one index between them:
// the one that does not hold the build's lock answers from memory meanwhile,
// then both use the index.
func TestPGVectorIndexBuiltOnceByTwoProcesses(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	h := []*postgres.Store{mustOpenPGVector(t, url, postgres.PGVectorOn), mustOpenPGVector(t, url, postgres.PGVectorOn)}
	if _, err := h[0].CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		if _, err := h[i%2].CreatePassage(ctx, "t", "a", model.CreatePassage{Content: fmt.Sprint(i), Embedding: randomVector(r, 32, 1), EmbeddingModel: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	q := randomVector(r, 32, 1)
	var first []model.PassageHit
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ready := 0
		for i, st := range h {
			hits, err := st.SearchPassages(ctx, "t", "a", model.PassageSearch{Mode: model.SearchVector, QueryEmbedding: q, Limit: 3})
			if err != nil || len(hits) != 3 {
				t.Fatalf("process %d: %d hits, %v", i, len(hits), err)
			}
			if first == nil {
				first = hits
			} else if hits[0].ID != first[0].ID || hits[0].Rank != first[0].Rank {
				t.Fatalf("process %d finds %s (%v), first search found %s (%v)", i, hits[0].ID, hits[0].Rank, first[0].ID, first[0].Rank)
			}
			if postgres.VectorIndexReadyForTest(ctx, st, 32) {
				ready++
			}
		}
		if ready == len(h) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the index was not ready for both processes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var indexes int
	if err := postgres.PoolForTest(h[0]).QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'passages_embedding_hnsw_%'`).Scan(&indexes); err != nil || indexes != 1 {
		t.Fatalf("%d HNSW indexes, want 1 (%v)", indexes, err)
	}
}

func TestPGVectorVersionCheck(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"0.8.0", true}, {"0.8.1", true}, {"0.10.0", true}, {"1.0.0", true}, {"0.7.4", false}, {"0.5", false}, {"x", false}, {"", false}} {
		if got := postgres.PGVectorAtLeastForTest(tc.v, 0, 8); got != tc.ok {
			t.Errorf("%q: %v, want %v", tc.v, got, tc.ok)
		}
	}
}

func randomVector(r *rand.Rand, dims int, scale float64) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}
