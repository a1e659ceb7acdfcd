package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// poolSource is what the pool's collector reads; *postgres.Store has it.
type poolSource interface {
	PoolStat() *pgxpool.Stat
}

// poolCollector reads the PostgreSQL pool's figures at scrape time.
type poolCollector struct {
	src   poolSource
	descs []poolSeries
}

type poolSeries struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*pgxpool.Stat) float64
}

func newPoolCollector(src poolSource) *poolCollector {
	series := func(name, help string, kind prometheus.ValueType, value func(*pgxpool.Stat) float64) poolSeries {
		return poolSeries{prometheus.NewDesc(prometheus.BuildFQName(namespace, "pg_pool", name), help, nil, nil), kind, value}
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return &poolCollector{src: src, descs: []poolSeries{
		series("acquired_conns", "Connections in use by a request now.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) }),
		series("idle_conns", "Open connections no one uses now.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) }),
		series("constructing_conns", "Connections being opened now.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.ConstructingConns()) }),
		series("total_conns", "Open connections: acquired, idle and being opened.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.TotalConns()) }),
		series("max_conns", "The pool's size limit.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) }),
		series("acquires_total", "Connections handed out.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.AcquireCount()) }),
		series("acquire_duration_seconds_total", "Time spent acquiring connections, waits included.", counter,
			func(s *pgxpool.Stat) float64 { return s.AcquireDuration().Seconds() }),
		series("empty_acquires_total", "Acquisitions that had to wait: no idle connection was there.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.EmptyAcquireCount()) }),
		series("empty_acquire_wait_seconds_total", "Time spent in those waits.", counter,
			func(s *pgxpool.Stat) float64 { return s.EmptyAcquireWaitTime().Seconds() }),
		series("canceled_acquires_total", "Acquisitions given up because the request's context ended.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.CanceledAcquireCount()) }),
		series("new_conns_total", "Connections opened.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.NewConnsCount()) }),
		series("max_lifetime_destroys_total", "Connections closed for reaching their maximum lifetime.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.MaxLifetimeDestroyCount()) }),
		series("max_idle_destroys_total", "Connections closed for idling too long.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.MaxIdleDestroyCount()) }),
	}}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.descs {
		ch <- s.desc
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.PoolStat()
	for _, s := range c.descs {
		ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(st))
	}
}
