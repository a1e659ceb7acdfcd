package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/expiry"
	"github.com/logbook/logbook/internal/repo"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"
)

// run is the whole program; main only wires it to the process. Tests call it with
// their own args, environment and writers, and stop it by cancelling ctx.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return newCommand(getenv, stdout, stderr).Run(ctx, append([]string{programName}, args...))
}

// serveAction is the root command: with no sub-command, serve. A word left over
// is a misspelled command, which must not start a server, and is reported before
// any complaint about the config that command would not have used.
func serveAction(getenv func(string) string, stdout io.Writer) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		if cmd.NArg() > 0 {
			return unknownCommand(cmd)
		}
		cfg, err := configFrom(cmd)
		if err != nil {
			return err
		}
		cfg.Getenv = getenv
		return serve(ctx, cfg, stdout)
	}
}

func serve(ctx context.Context, cfg config, stdout io.Writer) error {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		return fmt.Errorf("log-level: %w", err)
	}
	log := zerolog.New(stdout).Level(level).With().Timestamp().Logger()
	v := buildVersion()
	debug.SetGCPercent(cfg.GCPercent)
	if cfg.CPUProfile != "" {
		stop, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}

	store, err := openStore(ctx, cfg, true)
	if err != nil {
		return err
	}
	logVectorSearch(store, log)
	defer func() {
		if err := store.Close(); err != nil {
			log.Error().Err(err).Msg("close store")
		}
	}()

	// Bind before serving so that a taken port fails at once, with its address.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	allowOpen, err := decideOpenMode(ctx, store, ln.Addr(), cfg.InsecureOpen, log)
	if err == nil {
		err = refuseOpenCORS(cfg.CORSOrigins, allowOpen)
	}
	var ms *metricsServer
	if err == nil {
		ms, err = listenMetrics(cfg.MetricsAddr, store, v, log)
	}
	if err != nil {
		ln.Close()
		return err
	}
	defer ms.close() // before the store closes
	embeddings, stopEmbedding := startEmbedding(ctx, cfg, store, ms.embedding(), log)
	defer stopEmbedding() // before the store closes
	// The sweep starts here and is stopped (its batch under way finished)
	// before the metrics and the store close.
	defer startExpirySweep(ctx, cfg.ExpirySweep, cfg.IdempotencyTTL, store, ms.expired(), log)()
	handler := api.New(api.Config{Store: store, Log: log, MaxBodyBytes: cfg.MaxBodyBytes, BodyMemoryBytes: cfg.BodyMemory, Spec: logbook.OpenAPI,
		AllowOpen: allowOpen, RateLimit: cfg.RateLimit, CheckpointKeep: cfg.CheckpointKeep,
		CheckpointRetention: cfg.CheckpointRetention,
		ImportMaxBytes:      cfg.ImportMaxBytes, MaxFileBytes: cfg.MaxFileBytes, BackupDir: cfg.BackupDir, Version: v,
		CORSOrigins: cfg.CORSOrigins, Requests: ms.requests(), Pprof: cfg.Pprof, Embeddings: embeddings,
		IdempotencyTTL: cfg.IdempotencyTTL, EventsMaxStreams: cfg.EventsMaxStreams})
	defer handler.StopJobs() // after the HTTP server, before the store: running jobs end as interrupted
	ms.serve(handler)
	srv := &http.Server{
		Handler: handler,
		// A slow or stuck client cannot hold a connection forever.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	// Logged at every level: tests and scripts started with --addr :0 read the port here.
	log.Log().Str("addr", ln.Addr().String()).Str("db", displayDB(cfg.DB)).Str("sync", cfg.Sync).Str("version", v).Msg("listening")

	srv.RegisterOnShutdown(handler.Close) // live feeds never go idle: end them
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}

	// Stop accepting, let in-flight requests finish; the deferred Close then drains
	// the writer queue and checkpoints the WAL.
	log.Info().Msg("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info().Msg("stopped")
	return nil
}

// startExpirySweep runs the expiry sweep every interval (none when it is 0)
// and returns what stops it: ctx's end, waiting for the sweep under way to
// stop at its next batch, so that the store closes under no sweep.
func startExpirySweep(ctx context.Context, every, keys time.Duration, store repo.Store, obs expiry.Observer, log zerolog.Logger) (stop func()) {
	if every <= 0 {
		log.Info().Msg("expiry sweep off")
		return func() {}
	}
	log.Info().Dur("every", every).Msg("expiry sweep on")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		expiry.New(store, log.With().Str("component", "expiry").Logger(), obs).KeepKeys(keys).Run(ctx, every)
	}()
	return func() {
		cancel()
		<-done
	}
}
