package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/embed"
	"github.com/logbook/logbook/internal/expiry"
	"github.com/logbook/logbook/internal/metrics"
	"github.com/logbook/logbook/internal/repo"
)

// metricsServer serves GET /metrics on a listener of its own (--metrics-addr),
// never on the API's: the series are every tenant's figures together, which no
// tenant's key should read, and a scraper needs no key at all; the operator
// decides who reaches the port (loopback, a private interface) as for a
// database's. A nil *metricsServer is metrics off; its methods do nothing.
type metricsServer struct {
	reg *metrics.Registry
	ln  net.Listener
	srv *http.Server
	log zerolog.Logger
}

// listenMetrics binds addr and watches store, or returns nil when addr is
// empty. Binding comes first so that a taken port fails the start at once.
func listenMetrics(addr string, store repo.Store, version string, log zerolog.Logger) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics-addr: %w", err)
	}
	reg := metrics.New(version, log)
	reg.WatchStore(store)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reg.Handler())
	return &metricsServer{reg: reg, ln: ln, log: log, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}}, nil
}

// requests is what the API tells of each request; nil when metrics are off.
func (m *metricsServer) requests() api.RequestObserver {
	if m == nil {
		return nil
	}
	return m.reg
}

// expired is what the expiry sweep tells of what it erased; nil when metrics
// are off.
func (m *metricsServer) expired() expiry.Observer {
	if m == nil {
		return nil
	}
	return m.reg
}

// embedding is what the embedding client and worker tell of their calls and
// texts; nil when metrics are off.
func (m *metricsServer) embedding() embed.Observer {
	if m == nil {
		return nil
	}
	return m.reg
}

// serve watches the API's live feed and starts serving.
func (m *metricsServer) serve(handler *api.Server) {
	if m == nil {
		return
	}
	m.reg.WatchFeed(handler)
	m.log.Log().Str("metrics_addr", m.ln.Addr().String()).Msg("serving metrics")
	go func() {
		if err := m.srv.Serve(m.ln); err != nil && err != http.ErrServerClosed {
			m.log.Error().Err(err).Msg("metrics listener")
		}
	}()
}

// close stops the listener, letting a scrape under way finish for a moment;
// it runs before the store closes, so no scrape reads a closed store.
func (m *metricsServer) close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil {
		m.srv.Close()
	}
	m.ln.Close() // when serve never ran
}
