package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The embedding worker's series. Its calls are observed as they end; the
// queue's length is read from the store at scrape time.
//
// An endpoint is labelled by its host (and port), never by its URL's path
// or query, which a tenant writes: every URL called is under one of the
// operator's --embedding-allowed-urls, so the hosts are as few as those,
// whoever the tenants are and whatever they configure.

// embeddingSeries are observed by the embedding client and worker (the
// Registry is their Observer).
type embeddingSeries struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	texts    *prometheus.CounterVec
}

func newEmbeddingSeries() embeddingSeries {
	return embeddingSeries{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "embedding", Name: "calls_total",
			Help: "Calls to embedding endpoints, by the endpoint's host and result: ok, timeout, unreachable, redirect (not followed), status (not 200), answer (not the embeddings asked for).",
		}, []string{"endpoint", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "embedding", Name: "call_duration_seconds",
			Help: "Time one call to an embedding endpoint took, answered or not, by the endpoint's host. A call that times out lasts --embedding-timeout.",
			// A local model embeds a batch in tens of ms to seconds; a
			// remote API in a few hundred ms; the timeout is 30 s.
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"endpoint"}),
		texts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "embedding", Name: "texts_total",
			Help: "Passages and messages the embedding worker handled, by outcome: ready (stored), retry (the call failed; tried again after a backoff), failed (given up), deferred (not tried: its endpoint was busy).",
		}, []string{"outcome"}),
	}
}

// EmbeddingCall observes one call to an endpoint (embed.Observer).
func (r *Registry) EmbeddingCall(host, reason string, took time.Duration) {
	r.embedding.calls.WithLabelValues(host, reason).Inc()
	r.embedding.duration.WithLabelValues(host).Observe(took.Seconds())
}

// EmbeddingTexts counts texts by outcome (embed.Observer).
func (r *Registry) EmbeddingTexts(outcome string, n int) {
	r.embedding.texts.WithLabelValues(outcome).Add(float64(n))
}

// EmbeddingQueue is what the pending series reads: the store.
type EmbeddingQueue interface {
	PendingEmbeddings(ctx context.Context) (passages, messages int64, err error)
}

var embeddingPending = prometheus.NewDesc(prometheus.BuildFQName(namespace, "embedding", "pending"),
	"Passages and messages waiting for the server to embed them (due now, backing off, or being embedded), by kind.",
	[]string{"kind"}, nil)

// pendingCollector counts the queue at scrape time: two counts over the
// pending rows' own index, bounded by scrapeTimeout.
type pendingCollector struct{ q EmbeddingQueue }

func (c pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- embeddingPending }

func (c pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := scrapeContext()
	defer cancel()
	passages, messages, err := c.q.PendingEmbeddings(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(embeddingPending, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(embeddingPending, prometheus.GaugeValue, float64(passages), "passage")
	ch <- prometheus.MustNewConstMetric(embeddingPending, prometheus.GaugeValue, float64(messages), "message")
}
