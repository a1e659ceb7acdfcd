// Package metrics is Logbook's Prometheus exposition: HTTP requests by route,
// the SQLite writer and search index, the live feed, the embedding worker,
// the vector cache and the PostgreSQL pool.
// Histograms are observed as things happen (the writer's groups, requests);
// everything else is read from the store and the feed when Prometheus scrapes,
// so that the request and write paths pay nothing for it.
package metrics

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// namespace prefixes every series of Logbook's own.
const namespace = "logbook"

// scrapeTimeout bounds what one scrape may spend on a store read (the search
// index lag is a COUNT); past it the series is reported as failed.
const scrapeTimeout = 5 * time.Second

// Registry holds every collector of one server process. Its zero value is not
// usable; make it with New.
type Registry struct {
	reg      *prometheus.Registry
	log      zerolog.Logger
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	expired  *prometheus.CounterVec
	itemOps  *prometheus.CounterVec

	embedding embeddingSeries
}

// New returns a registry with the Go runtime's and the process's collectors,
// build information and the HTTP series; the store and the feed are added with
// WatchStore and WatchFeed.
func New(version string, log zerolog.Logger) *Registry {
	r := &Registry{
		reg: prometheus.NewRegistry(),
		log: log,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by method, route pattern (not the raw path: /v1/sessions/{id}) and status code.",
		}, []string{"method", "route", "code"}),
		// Latency without the status code, to keep the series few: the
		// counter above has the codes, and a 4xx is answered as fast as a 2xx.
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
			Help: "Time from a request's arrival to the end of its answer, by method and route pattern. Live feeds (…/events) last as long as the client stays.",
			// A single append is ~3 ms p50 and ~7 ms p99 at 32 clients
			// (docs/benchmarks.md); exports and imports take seconds.
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "expired_removed_total",
			Help: "Sessions, archival passages and items past their expires_at, and Idempotency-Keys past --idempotency-ttl, that the server's expiry sweep (--expiry-sweep) erased, by kind: session, passage, item or idempotency_key.",
		}, []string{"kind"}),
		embedding: newEmbeddingSeries(),
		itemOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "item_operations_total",
			Help: "Item store operations done, by operation: get, put, delete, search or list_namespaces; a batch counts each of its operations.",
		}, []string{"op"}),
	}
	for _, op := range []string{"get", "put", "delete", "search", "list_namespaces"} {
		r.itemOps.WithLabelValues(op)
	}
	// Every series exists from the start, at 0, so that a rate() has a base.
	r.expired.WithLabelValues("session")
	r.expired.WithLabelValues("passage")
	for _, outcome := range []string{"ready", "retry", "failed", "deferred"} {
		r.embedding.texts.WithLabelValues(outcome)
	}
	r.expired.WithLabelValues("idempotency_key")
	r.expired.WithLabelValues("item")
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help:        "Always 1; the build's version is its label.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	build.Set(1)
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build, r.requests, r.duration, r.expired, r.itemOps,
		r.embedding.calls, r.embedding.duration, r.embedding.texts,
	)
	return r
}

// Handler serves the exposition. A series that fails (a store read that timed
// out) is left out and logged; the rest is still served.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:            promLog{r.log},
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            r.reg, // promhttp_metric_handler_errors_total
		MaxRequestsInFlight: 4,
		Timeout:             2 * scrapeTimeout,
	})
}

// Gatherer is the registry itself, for tests that read series directly.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// ObserveRequest counts one answered request; it is the API's RequestObserver.
// route is chi's pattern, empty when no route matched. The method is one of
// the standard ones or "other", so that neither label can grow without bound.
func (r *Registry) ObserveRequest(method, route string, status int, took time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	method = knownMethod(method)
	r.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	r.duration.WithLabelValues(method, route).Observe(took.Seconds())
}

// ExpiredRemoved counts what the expiry sweep erased; it is the sweep's
// Observer. kind is "session", "passage", "item" or "idempotency_key".
func (r *Registry) ExpiredRemoved(kind string, n int64) {
	r.expired.WithLabelValues(kind).Add(float64(n))
}

// ItemOperations counts item store operations; it is the API's
// ItemObserver. op is one of the five operations, so the label stays small.
func (r *Registry) ItemOperations(op string, n int) {
	r.itemOps.WithLabelValues(op).Add(float64(n))
}

func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// WatchStore adds the collectors of the store's backend: the SQLite writer's
// and search index's, or the PostgreSQL pool's, and the embedding queue's and
// the vector cache's of either. A store that is neither adds nothing of the first two.
func (r *Registry) WatchStore(store any) {
	if q, ok := store.(EmbeddingQueue); ok {
		r.reg.MustRegister(pendingCollector{q})
	}
	if c, ok := store.(VectorCache); ok {
		r.reg.MustRegister(vectorCacheCollector{c})
	}
	switch st := store.(type) {
	case *sqlite.Store:
		c := newSQLiteCollector(st)
		r.reg.MustRegister(c)
		st.ObserveGroups(c)
		st.ObserveCheckpoints(c)
	case *postgres.Store:
		r.reg.MustRegister(newPoolCollector(st))
	}
}

// FeedSource is what the live feed's collector reads: the API server's hub.
type FeedSource interface {
	FeedStats() feed.Stats
}

// WatchFeed adds the live feed's series.
func (r *Registry) WatchFeed(src FeedSource) {
	r.reg.MustRegister(&feedCollector{src: src})
}

// promLog sends promhttp's errors to the server's log.
type promLog struct{ log zerolog.Logger }

func (l promLog) Println(v ...any) { l.log.Warn().Msg("metrics: " + fmt.Sprint(v...)) }

// scrapeContext bounds one collector's store reads.
func scrapeContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), scrapeTimeout)
}
