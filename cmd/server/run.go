package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/repo"
	"github.com/rs/zerolog"
)

const usage = `usage: server [flags]                 run the HTTP API
       server [flags] migrate status|up|down
       server [flags] keys create --tenant NAME --scope read|write|admin [--name LABEL]
       server [flags] keys list [--tenant NAME]
       server [flags] keys revoke KEY_ID
       server [flags] export [--tenant NAME] SESSION_ID > FILE.ndjson
       server [flags] import [--tenant NAME] [--as-new] [--file FILE.ndjson] < FILE.ndjson
       server [flags] backup PATH       write a consistent copy of the database (safe while serving)
(run "server -h" for the flags)`

// run is the whole program; main only wires it to the process. Tests call it with
// their own args, environment and writers, and stop it by cancelling ctx.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, rest, err := parseConfig("server", args, getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		switch rest[0] {
		case "migrate":
			if len(rest) != 2 {
				return fmt.Errorf("migrate needs one of status, up, down\n%s", usage)
			}
			return repo.Migrate(ctx, cfg.DB, rest[1], stdout)
		case "keys":
			return keysCommand(ctx, cfg, rest[1:], stdout, stderr)
		case "export":
			return exportCommand(ctx, cfg, rest[1:], stdout, stderr)
		case "import":
			return importCommand(ctx, cfg, rest[1:], stdout, stderr)
		case "backup":
			return backupCommand(ctx, cfg, rest[1:], stdout)
		default:
			return fmt.Errorf("unknown command %q\n%s", rest[0], usage)
		}
	}
	return serve(ctx, cfg, stdout)
}

func serve(ctx context.Context, cfg config, stdout io.Writer) error {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		return fmt.Errorf("log-level: %w", err)
	}
	log := zerolog.New(stdout).Level(level).With().Timestamp().Logger()

	store, err := repo.Open(ctx, repo.Config{Path: cfg.DB, Sync: cfg.Sync, Migrate: cfg.Migrate, NoMessageIndex: !cfg.SearchIndex})
	if err != nil {
		return err
	}
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
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler: api.New(api.Config{Store: store, Log: log, MaxBodyBytes: cfg.MaxBodyBytes, Spec: logbook.OpenAPI,
			AllowOpen: allowOpen, RateLimit: cfg.RateLimit, CheckpointKeep: cfg.CheckpointKeep,
			ImportMaxBytes: cfg.ImportMaxBytes, BackupDir: cfg.BackupDir}),
		// A slow or stuck client cannot hold a connection forever.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	// Logged at every level: tests and scripts started with --addr :0 read the port here.
	log.Log().Str("addr", ln.Addr().String()).Str("db", cfg.DB).Str("sync", cfg.Sync).Msg("listening")

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
