package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logbook/logbook/internal/repo/sqlite"
)

// sqliteCollector reads the writer's counters, queue and files at scrape time
// and observes each group the writer runs and each WAL checkpoint (it is the
// store's GroupObserver and CheckpointObserver).
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

	checkpoints   *prometheus.CounterVec
	checkpointDur *prometheus.HistogramVec
	walUncopied   prometheus.Gauge
	walMax        *prometheus.Desc
}

func newSQLiteCollector(st *sqlite.Store) *sqliteCollector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "sqlite", n) }
	c := &sqliteCollector{
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
			"WAL fsyncs made by commits: one per commit under --sync=full, none under normal. WAL checkpoints sync too and are not counted (logbook_sqlite_wal_checkpoints_total).", nil, nil),
		indexed: prometheus.NewDesc(name("search_indexed_total"),
			"Messages the indexer added to the search index.", nil, nil),
		indexLag: prometheus.NewDesc(name("search_index_lag"),
			"Messages, of every tenant, stored but not yet searchable (the API's index_lag, summed). Absent when this process runs no indexer.", nil, nil),
		fileBytes: prometheus.NewDesc(name("file_bytes"),
			"Size on disk of the database (db), its write-ahead log (wal), the search index (search) and its log (search_wal).", []string{"file"}, nil),
		checkpoints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("wal_checkpoints_total"),
			Help: "WAL checkpoints by mode (passive: every 250 ms; restart: the writer's hand-over past --wal-max-bytes; truncate: the WAL over the bound while the writer is idle) and outcome (done; partial: frames left uncopied; busy: a reader or another process kept the WAL from restarting; error).",
		}, []string{"mode", "outcome"}),
		checkpointDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name("wal_checkpoint_duration_seconds"),
			Help: "Time one WAL checkpoint took, by mode; a restart's is how long the writer, and every append queued behind it, waited.",
			// A restart waits up to 0.1 s for readers on top of copying and
			// an fsync of the database file; tens of ms on the benchmark
			// machine. Seconds mean a slow disk.
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"mode"}),
		walUncopied: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: name("wal_uncopied_frames"),
			Help: "WAL frames (a page each) not yet copied into the database when the last checkpoint ended; it keeps growing while a long reader (an export, a backup) holds an old snapshot.",
		}),
		walMax: prometheus.NewDesc(name("wal_max_bytes"),
			"The bound on the WAL file (--wal-max-bytes; 0: none): it stays under it plus one group of writes unless a reader holds a snapshot for long.", nil, nil),
	}
	// Every mode and outcome exists from the start, at 0, so that a rate()
	// or increase() has a base.
	for _, mode := range []string{sqlite.CheckpointPassive, sqlite.CheckpointRestart, sqlite.CheckpointTruncate} {
		for _, outcome := range []string{sqlite.CheckpointDone, sqlite.CheckpointPartial, sqlite.CheckpointBusy, sqlite.CheckpointError} {
			c.checkpoints.WithLabelValues(mode, outcome)
		}
		c.checkpointDur.WithLabelValues(mode)
	}
	return c
}

// ObserveCheckpoint is called by the store after each WAL checkpoint.
func (c *sqliteCollector) ObserveCheckpoint(ck sqlite.Checkpoint) {
	c.checkpoints.WithLabelValues(ck.Mode, ck.Outcome).Inc()
	c.checkpointDur.WithLabelValues(ck.Mode).Observe(ck.Took.Seconds())
	if ck.Frames >= 0 && ck.Copied >= 0 {
		c.walUncopied.Set(float64(ck.Frames - ck.Copied))
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
	c.checkpoints.Describe(ch)
	c.checkpointDur.Describe(ch)
	c.walUncopied.Describe(ch)
	for _, d := range []*prometheus.Desc{c.queue, c.queueCap, c.commits, c.writes, c.fsyncs, c.indexed, c.indexLag, c.fileBytes, c.walMax} {
		ch <- d
	}
}

func (c *sqliteCollector) Collect(ch chan<- prometheus.Metric) {
	c.groupSize.Collect(ch)
	c.groupTime.Collect(ch)
	c.checkpoints.Collect(ch)
	c.checkpointDur.Collect(ch)
	c.walUncopied.Collect(ch)
	ch <- prometheus.MustNewConstMetric(c.walMax, prometheus.GaugeValue, float64(c.st.WALMaxBytes()))
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
