package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logbook/logbook/internal/repo/sqlite"
)

// sqliteCollector reads the writer's counters, queue and files at scrape time
// and observes each group the writer runs (it is the store's GroupObserver).
type sqliteCollector struct {
	st *sqlite.Store

	groupSize prometheus.Histogram
	groupTime prometheus.Histogram
	queue     *prometheus.Desc
	queueCap  *prometheus.Desc
	commits   *prometheus.Desc
	writes    *prometheus.Desc
	fsyncs    *prometheus.Desc
	indexed   *prometheus.Desc
	indexLag  *prometheus.Desc
	fileBytes *prometheus.Desc
}

func newSQLiteCollector(st *sqlite.Store) *sqliteCollector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "sqlite", n) }
	return &sqliteCollector{
		st: st,
		groupSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: name("writer_group_size"),
			Help: "Writes per group the single writer ran as one transaction (group commit); at most 1000.",
			// Powers of two up to the writer's cap: a busy server's groups are
			// tens of writes (32 clients: ~30), a quiet one's one.
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000},
		}),
		groupTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: name("writer_group_duration_seconds"),
			Help: "Time the writer took for one group: its statements, the commit (an fsync under --sync=full) and the answers.",
			// A 4 KiB fsync is ~0.2 ms on the benchmark machine, a group of
			// appends a few ms; stalls of 10-600 ms happen (docs/benchmarks.md).
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}),
		queue: prometheus.NewDesc(name("writer_queue_depth"),
			"Writes waiting for the single writer now.", nil, nil),
		queueCap: prometheus.NewDesc(name("writer_queue_capacity"),
			"Writes that may wait before a request blocks on enqueueing its own.", nil, nil),
		commits: prometheus.NewDesc(name("writer_commits_total"),
			"Transactions the writer committed.", nil, nil),
		writes: prometheus.NewDesc(name("writer_writes_total"),
			"Writes the committed transactions carried; ÷ commits is the mean group size.", nil, nil),
		fsyncs: prometheus.NewDesc(name("commit_fsyncs_total"),
			"WAL fsyncs made by commits: one per commit under --sync=full, none under normal. WAL checkpoints (every 250 ms) sync too and are not counted.", nil, nil),
		indexed: prometheus.NewDesc(name("search_indexed_total"),
			"Messages the indexer added to the search index.", nil, nil),
		indexLag: prometheus.NewDesc(name("search_index_lag"),
			"Messages, of every tenant, stored but not yet searchable (the API's index_lag, summed). Absent when this process runs no indexer.", nil, nil),
		fileBytes: prometheus.NewDesc(name("file_bytes"),
			"Size on disk of the database (db), its write-ahead log (wal), the search index (search) and its log (search_wal).", []string{"file"}, nil),
	}
}

// ObserveGroup is called by the writer after each group.
func (c *sqliteCollector) ObserveGroup(writes int, took time.Duration) {
	c.groupSize.Observe(float64(writes))
	c.groupTime.Observe(took.Seconds())
}

func (c *sqliteCollector) Describe(ch chan<- *prometheus.Desc) {
	c.groupSize.Describe(ch)
	c.groupTime.Describe(ch)
	for _, d := range []*prometheus.Desc{c.queue, c.queueCap, c.commits, c.writes, c.fsyncs, c.indexed, c.indexLag, c.fileBytes} {
		ch <- d
	}
}

func (c *sqliteCollector) Collect(ch chan<- prometheus.Metric) {
	c.groupSize.Collect(ch)
	c.groupTime.Collect(ch)
	st := c.st.Stats()
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(c.st.QueueDepth()))
	ch <- prometheus.MustNewConstMetric(c.queueCap, prometheus.GaugeValue, float64(c.st.QueueCapacity()))
	ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(st.Commits))
	ch <- prometheus.MustNewConstMetric(c.writes, prometheus.CounterValue, float64(st.Writes))
	fsyncs := 0.0
	if c.st.SyncFull() {
		fsyncs = float64(st.Commits)
	}
	ch <- prometheus.MustNewConstMetric(c.fsyncs, prometheus.CounterValue, fsyncs)
	ch <- prometheus.MustNewConstMetric(c.indexed, prometheus.CounterValue, float64(st.Indexed))

	ctx, cancel := scrapeContext()
	defer cancel()
	switch lag, ok, err := c.st.IndexLag(ctx); {
	case err != nil:
		ch <- prometheus.NewInvalidMetric(c.indexLag, err)
	case ok:
		ch <- prometheus.MustNewConstMetric(c.indexLag, prometheus.GaugeValue, float64(lag))
	}

	files, err := c.st.Files()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.fileBytes, err)
		return
	}
	for _, f := range []struct {
		name string
		n    int64
	}{{"db", files.DB}, {"wal", files.WAL}, {"search", files.Search}, {"search_wal", files.SearchWAL}} {
		ch <- prometheus.MustNewConstMetric(c.fileBytes, prometheus.GaugeValue, float64(f.n), f.name)
	}
}
