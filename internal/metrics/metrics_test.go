package metrics

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

func mustOpen(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "logbook.db"), Migrate: true})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st
}

type fakeFeed struct{ st feed.Stats }

func (f fakeFeed) FeedStats() feed.Stats { return f.st }

// Labels stay bounded whatever a client sends: the route is a pattern or
// "unmatched", the method a standard one or "other".
func TestObserveRequestLabels(t *testing.T) {
	cases := []struct {
		name                string
		method, route       string
		status              int
		wantMethod, wantRte string
	}{
		{"pattern_kept", "POST", "/v1/sessions/{id}/messages", 201, "POST", "/v1/sessions/{id}/messages"},
		{"no_route_is_unmatched", "GET", "", 404, "GET", "unmatched"},
		{"odd_method_is_other", "BREW", "", 405, "other", "unmatched"},
		{"head_kept", "HEAD", "/healthz", 200, "HEAD", "/healthz"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := New("test", zerolog.Nop())
			r.ObserveRequest(tc.method, tc.route, tc.status, 3*time.Millisecond)
			c, err := r.requests.GetMetricWithLabelValues(tc.wantMethod, tc.wantRte, strconv.Itoa(tc.status))
			if err != nil {
				t.Fatal(err)
			}
			if got := testutil.ToFloat64(c); got != 1 {
				t.Errorf("requests{%s,%s,%d} = %v, want 1", tc.wantMethod, tc.wantRte, tc.status, got)
			}
			if n := testutil.CollectAndCount(r.requests); n != 1 {
				t.Errorf("%d request series, want 1", n)
			}
		})
	}
}

// Every series of a registry watching a real store and a feed passes
// Prometheus' own lint (names, units, help), and the writer's figures follow
// the writes.
func TestRegistryLintAndWriter(t *testing.T) {
	st := mustOpen(t)
	r := New("test", zerolog.Nop())
	r.WatchStore(st)
	r.WatchFeed(fakeFeed{feed.Stats{Readers: 2, Delivered: 7}})
	r.ObserveRequest("GET", "/healthz", 200, time.Millisecond)

	const sessions = 4
	for range sessions {
		if _, err := st.CreateSession(context.Background(), "t1", model.CreateSession{}); err != nil {
			t.Fatal(err)
		}
	}

	problems, err := testutil.GatherAndLint(r.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	cases := []struct {
		name string
		want float64
		min  bool // at least want, not exactly
	}{
		{"logbook_sqlite_writer_commits_total", 1, true},
		{"logbook_sqlite_writer_writes_total", sessions, false},
		{"logbook_sqlite_writer_queue_depth", 0, false},
		{"logbook_sqlite_writer_queue_capacity", 4096, false},
		{"logbook_sqlite_wal_max_bytes", sqlite.DefaultWALMaxBytes, false},
		{"logbook_feed_subscribers", 2, false},
		{"logbook_feed_events_delivered_total", 7, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := gathered(t, r, tc.name)
			if !ok {
				t.Fatalf("%s not gathered", tc.name)
			}
			if got != tc.want && !(tc.min && got >= tc.want) {
				t.Errorf("%s = %v, want %v (at least: %v)", tc.name, got, tc.want, tc.min)
			}
		})
	}
	commits, _ := gathered(t, r, "logbook_sqlite_writer_commits_total")
	if fsyncs, _ := gathered(t, r, "logbook_sqlite_commit_fsyncs_total"); fsyncs != commits {
		t.Errorf("fsyncs = %v under synchronous=FULL, want one per commit (%v)", fsyncs, commits)
	}
	if n, err := testutil.GatherAndCount(r.Gatherer(), "logbook_pg_pool_total_conns"); err != nil || n != 0 {
		t.Errorf("a SQLite store exposes %d pool series (%v), want none", n, err)
	}
}

// The WAL's checkpoints are counted by mode and outcome and timed: the
// checkpointer's PASSIVE ones, and the writer's RESTART once the WAL passes
// the bound (here 64 KiB, which the migrations alone pass).
func TestWALCheckpointSeries(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "logbook.db"),
		Migrate: true, WALMaxBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New("test", zerolog.Nop())
	r.WatchStore(st)
	if got, _ := gathered(t, r, "logbook_sqlite_wal_max_bytes"); got != 64<<10 {
		t.Errorf("wal_max_bytes = %v, want %d", got, 64<<10)
	}
	counter := func(mode, outcome string) float64 {
		return labeled(t, r, "logbook_sqlite_wal_checkpoints_total", map[string]string{"mode": mode, "outcome": outcome})
	}
	if got := counter(sqlite.CheckpointRestart, sqlite.CheckpointBusy); got != 0 {
		t.Errorf("restart busy = %v before anything ran, want a series at 0", got)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := st.CreateSession(context.Background(), "t1", model.CreateSession{}); err != nil {
			t.Fatal(err)
		}
		if counter(sqlite.CheckpointRestart, sqlite.CheckpointDone) > 0 && counter(sqlite.CheckpointPassive, sqlite.CheckpointDone) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no restart and passive checkpoint within 10 s: restart %v, passive %v",
				counter(sqlite.CheckpointRestart, sqlite.CheckpointDone), counter(sqlite.CheckpointPassive, sqlite.CheckpointDone))
		}
		time.Sleep(50 * time.Millisecond)
	}
	n, err := testutil.GatherAndCount(r.Gatherer(), "logbook_sqlite_wal_checkpoint_duration_seconds")
	if err != nil || n != 3 {
		t.Errorf("%d checkpoint duration series (%v), want one per mode", n, err)
	}
	problems, err := testutil.GatherAndLint(r.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// labeled is the value of the counter or gauge name with exactly labels.
func labeled(t *testing.T, r *Registry, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	t.Fatalf("%s%v not gathered", name, labels)
	return 0
}

// gathered is the value of a gauge or counter without labels.
func gathered(t *testing.T, r *Registry, name string) (float64, bool) {
	t.Helper()
	fams, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name || len(f.GetMetric()) != 1 {
			continue
		}
		m := f.GetMetric()[0]
		if m.Counter != nil {
			return m.Counter.GetValue(), true
		}
		return m.Gauge.GetValue(), true
	}
	return 0, false
}

// The embedding series pass Prometheus' lint, and the queue is read from the
// store: a pending passage shows at the next scrape.
func TestEmbeddingSeries(t *testing.T) {
	st := mustOpen(t)
	r := New("test", zerolog.Nop())
	r.WatchStore(st)
	r.EmbeddingCall("127.0.0.1:11435", "ok", 40*time.Millisecond)
	r.EmbeddingCall("127.0.0.1:11435", "timeout", 30*time.Second)
	r.EmbeddingTexts("ready", 3)
	ctx := context.Background()
	cfg := &model.EmbeddingConfig{URL: "http://127.0.0.1:11435/v1/embeddings", Model: "m"}
	if _, err := st.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a", Embedding: cfg}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "x"}); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(r.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if got := testutil.ToFloat64(r.embedding.calls.WithLabelValues("127.0.0.1:11435", "timeout")); got != 1 {
		t.Errorf("timeouts = %v, want 1", got)
	}
	if got := testutil.ToFloat64(r.embedding.texts.WithLabelValues("ready")); got != 3 {
		t.Errorf("ready = %v, want 3", got)
	}
	fams, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "logbook_embedding_pending" {
			continue
		}
		for _, m := range f.GetMetric() {
			if want := map[string]float64{"passage": 1, "message": 0}[m.GetLabel()[0].GetValue()]; m.GetGauge().GetValue() != want {
				t.Errorf("pending %v = %v, want %v", m.GetLabel(), m.GetGauge().GetValue(), want)
			}
		}
		return
	}
	t.Error("logbook_embedding_pending not gathered")
}

// The vector cache's size and use, read from the store at scrape time: the
// first search by meaning of an agent loads it (a miss), the next finds it.
func TestVectorCacheSeries(t *testing.T) {
	st := mustOpen(t)
	r := New("test", zerolog.Nop())
	r.WatchStore(st)
	ctx := context.Background()
	if _, err := st.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := st.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "p" + strconv.Itoa(i),
			Embedding: []float32{1, float32(i)}, EmbeddingModel: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := st.SearchPassages(ctx, "t", "a", model.PassageSearch{Mode: model.SearchVector, QueryEmbedding: []float32{1, 0}, Limit: 2}); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := testutil.GatherAndLint(r.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	cases := []struct {
		name string
		want float64
	}{
		{"logbook_vector_cache_agents", 1},
		{"logbook_vector_cache_vectors", 3},
		{"logbook_vector_cache_misses_total", 1},
		{"logbook_vector_cache_hits_total", 1},
		{"logbook_vector_cache_evictions_total", 0},
	}
	for _, tc := range cases {
		if got, ok := gathered(t, r, tc.name); !ok || got != tc.want {
			t.Errorf("%s = %v (gathered: %v), want %v", tc.name, got, ok, tc.want)
		}
	}
	if got, _ := gathered(t, r, "logbook_vector_cache_bytes"); got <= 0 {
		t.Errorf("logbook_vector_cache_bytes = %v, want the vectors' size", got)
	}
}
