package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"

	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/embed"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// embeddingConfig reads the --embedding-* flags into c.
func embeddingConfig(cmd *cli.Command, c *config) error {
	url, mdl, dims := cmd.String("embedding-url"), cmd.String("embedding-model"), cmd.Int("embedding-dims")
	c.EmbeddingTimeout = cmd.Duration("embedding-timeout")
	if c.EmbeddingTimeout <= 0 {
		return fmt.Errorf("embedding-timeout must be positive, not %s", c.EmbeddingTimeout)
	}
	c.EmbeddingCalls, c.EmbeddingCallsPerEndpoint = cmd.Int("embedding-calls"), cmd.Int("embedding-calls-per-endpoint")
	if c.EmbeddingCalls < 1 || c.EmbeddingCallsPerEndpoint < 1 {
		return fmt.Errorf("embedding-calls and embedding-calls-per-endpoint must be at least 1, not %d and %d",
			c.EmbeddingCalls, c.EmbeddingCallsPerEndpoint)
	}
	for _, p := range strings.Split(cmd.String("embedding-allowed-urls"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		// Refused here rather than never matching later: a prefix with dot
		// segments or escaped slashes is a mistake the operator should see.
		if err := model.CheckEmbeddingPrefix(p); err != nil {
			return fmt.Errorf("embedding-allowed-urls: %q %s", p, err)
		}
		c.EmbeddingAllowed = append(c.EmbeddingAllowed, p)
	}
	if url == "" {
		if mdl != "" || dims != 0 {
			return fmt.Errorf("embedding-model and embedding-dims need embedding-url")
		}
		return nil
	}
	d := &model.EmbeddingConfig{URL: url, Model: mdl, Dimensions: dims, APIKeyEnv: model.EmbeddingKeyEnvPrefix}
	if err := d.CheckEndpoint("embedding", []string{url}); err != nil {
		return fmt.Errorf("%s", strings.Replace(err.Error(), "embedding.", "embedding-", 1))
	}
	c.EmbeddingDefault = d
	c.EmbeddingAllowed = append(c.EmbeddingAllowed, d.URL)
	return nil
}

// startEmbedding starts the embedding worker (always: agents may name their
// own endpoints even when the server has none) and returns what the API
// needs of it, and a stop that waits for the worker to end.
func startEmbedding(ctx context.Context, cfg config, store repo.Store, obs embed.Observer, log zerolog.Logger) (api.Embeddings, func()) {
	log = log.With().Str("worker", "embedding").Logger()
	client := &embed.Client{Transport: http.DefaultTransport, Getenv: cfg.Getenv, Timeout: cfg.EmbeddingTimeout,
		Allowed: cfg.EmbeddingAllowed, Observer: obs}
	w := &embed.Worker{Store: store, Client: client, Default: cfg.EmbeddingDefault, Log: log, Observer: obs,
		Calls: cfg.EmbeddingCalls, PerEndpoint: cfg.EmbeddingCallsPerEndpoint, PerTenant: max(cfg.EmbeddingCalls/2, 1)}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()
	return api.Embeddings{Default: cfg.EmbeddingDefault, AllowedURLs: cfg.EmbeddingAllowed,
			Query: &embed.Query{Store: store, Client: client, Default: cfg.EmbeddingDefault, Log: log}, Wake: w.Wake},
		func() { cancel(); wg.Wait() }
}
