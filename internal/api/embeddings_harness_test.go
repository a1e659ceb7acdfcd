package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/embed"
	"github.com/logbook/logbook/internal/embed/standin"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// testEmbedding runs the project's stand-in embedding server on loopback and
// an embedding worker over the test's store, retrying fast.
type testEmbedding struct {
	standin    *standin.Server
	url        string // the stand-in's /v1/embeddings
	base       string // its root, the allowed prefix
	serverWide bool   // the server's default endpoint is the stand-in
	timeout    time.Duration
	// manual: no worker runs; the test calls worker.Step itself, so that the
	// faults its writes meet come in the test's order (the simulation).
	manual      bool
	worker      *embed.Worker
	clientFault *repo.Faults // for the endpoint's embedding_timeout; the store's if nil
	allowed     []string     // allowed besides the stand-in (base)
	getenv      func(string) string
	observer    embed.Observer
}

const standinDims = 64

// withEmbedding starts the stand-in and an embedding worker; serverWide makes
// the stand-in the server's default endpoint (else only agents naming it embed).
func withEmbedding(t testing.TB, serverWide bool) (*testEmbedding, testServerOption) {
	e := &testEmbedding{standin: &standin.Server{Dims: standinDims}, serverWide: serverWide}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/embeddings", e.standin)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	e.base, e.url = ts.URL+"/", ts.URL+"/v1/embeddings"
	return e, func(c *testConfig) { c.embed = e }
}

func (e *testEmbedding) config() *model.EmbeddingConfig {
	return &model.EmbeddingConfig{URL: e.url, Model: standin.Model, Dimensions: standinDims}
}

func (e *testEmbedding) start(t testing.TB, cfg *testConfig, st repo.Store) {
	var def *model.EmbeddingConfig
	if e.serverWide {
		def = e.config()
	}
	faults := e.clientFault
	if faults == nil {
		faults = cfg.repo.Faults
	}
	allowed := append([]string{e.base}, e.allowed...)
	client := &embed.Client{Timeout: e.timeout, Faults: faults, Allowed: allowed, Getenv: e.getenv, Observer: e.observer}
	w := &embed.Worker{Store: st, Client: client, Default: def, Log: zerolog.Nop(), Observer: e.observer,
		Backoff: func(int) time.Duration { return 20 * time.Millisecond }, Poll: 50 * time.Millisecond, MaxAttempts: 4}
	if e.manual {
		w.Backoff = func(int) time.Duration { return 0 }
		w.Lease = time.Millisecond
	}
	e.worker = w
	cfg.api.Embeddings = api.Embeddings{Default: def, AllowedURLs: allowed,
		Query: &embed.Query{Store: st, Client: client, Default: def}, Wake: w.Wake}
	if e.manual {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
}
