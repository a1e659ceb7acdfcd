package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	feedReaders = prometheus.NewDesc(prometheus.BuildFQName(namespace, "feed", "subscribers"),
		"Live feed streams (Server-Sent Events) open now.", nil, nil)
	feedBuffered = prometheus.NewDesc(prometheus.BuildFQName(namespace, "feed", "buffered_events"),
		"Events the live feed holds in memory for its readers now.", nil, nil)
	feedRead = prometheus.NewDesc(prometheus.BuildFQName(namespace, "feed", "events_read_total"),
		"Events the live feed read from the store's event log, once for all its readers.", nil, nil)
	feedDelivered = prometheus.NewDesc(prometheus.BuildFQName(namespace, "feed", "events_delivered_total"),
		"Events handed to live feed streams; an event two streams read counts twice.", nil, nil)
)

// feedCollector reads the live feed's hub at scrape time.
type feedCollector struct{ src FeedSource }

func (c *feedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- feedReaders
	ch <- feedBuffered
	ch <- feedRead
	ch <- feedDelivered
}

func (c *feedCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.FeedStats()
	ch <- prometheus.MustNewConstMetric(feedReaders, prometheus.GaugeValue, float64(st.Readers))
	ch <- prometheus.MustNewConstMetric(feedBuffered, prometheus.GaugeValue, float64(st.Buffered))
	ch <- prometheus.MustNewConstMetric(feedRead, prometheus.CounterValue, float64(st.Read))
	ch <- prometheus.MustNewConstMetric(feedDelivered, prometheus.CounterValue, float64(st.Delivered))
}
