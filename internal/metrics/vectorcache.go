package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// VectorCache is what the vector cache's series read: the store, whose
// in-memory cache of archival embeddings serves searches by meaning.
type VectorCache interface {
	VectorCacheStats() vecindex.Stats
}

// Both backends have the cache; WatchStore finds it by this interface, so a
// backend that lost the method would lose its series without this check.
var (
	_ VectorCache = (*sqlite.Store)(nil)
	_ VectorCache = (*postgres.Store)(nil)
)

var (
	vectorCacheAgents = prometheus.NewDesc(prometheus.BuildFQName(namespace, "vector_cache", "agents"),
		"Agents whose passages' embeddings the vector cache holds now.", nil, nil)
	vectorCacheVectors = prometheus.NewDesc(prometheus.BuildFQName(namespace, "vector_cache", "vectors"),
		"Embeddings the vector cache holds now.", nil, nil)
	vectorCacheBytes = prometheus.NewDesc(prometheus.BuildFQName(namespace, "vector_cache", "bytes"),
		"Memory the vector cache's embeddings take, as --vector-cache-bytes bounds it.", nil, nil)
	vectorCacheHits = prometheus.NewDesc(prometheus.BuildFQName(namespace, "vector_cache", "hits_total"),
		"Searches by meaning that found their agent's embeddings in the cache.", nil, nil)
	vectorCacheMisses = prometheus.NewDesc(prometheus.BuildFQName(namespace, "vector_cache", "misses_total"),
		"Searches by meaning that waited for their agent's embeddings to load from the database.", nil, nil)
	vectorCacheEvictions = prometheus.NewDesc(prometheus.BuildFQName(namespace, "vector_cache", "evictions_total"),
		"Agents the vector cache dropped, the least recently searched first, to stay within --vector-cache-bytes.", nil, nil)
)

// vectorCacheCollector reads the cache's counters at scrape time: a search
// pays nothing for them but an atomic add.
type vectorCacheCollector struct{ c VectorCache }

func (c vectorCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{vectorCacheAgents, vectorCacheVectors, vectorCacheBytes, vectorCacheHits, vectorCacheMisses, vectorCacheEvictions} {
		ch <- d
	}
}

func (c vectorCacheCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.c.VectorCacheStats()
	ch <- prometheus.MustNewConstMetric(vectorCacheAgents, prometheus.GaugeValue, float64(st.Agents))
	ch <- prometheus.MustNewConstMetric(vectorCacheVectors, prometheus.GaugeValue, float64(st.Vectors))
	ch <- prometheus.MustNewConstMetric(vectorCacheBytes, prometheus.GaugeValue, float64(st.Bytes))
	ch <- prometheus.MustNewConstMetric(vectorCacheHits, prometheus.CounterValue, float64(st.Hits))
	ch <- prometheus.MustNewConstMetric(vectorCacheMisses, prometheus.CounterValue, float64(st.Misses))
	ch <- prometheus.MustNewConstMetric(vectorCacheEvictions, prometheus.CounterValue, float64(st.Evictions))
}
