package main

import (
	"context"
	"net/url"
	"strings"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// isPostgres reports whether --db names a PostgreSQL database (a postgres://
// URL) rather than a SQLite file.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// openStore opens the backend --db names. serving: the server's own store (with
// the search indexer on SQLite); otherwise a one-shot command's, which leaves
// indexing to a server on the same file.
func openStore(ctx context.Context, cfg config, serving bool) (repo.Store, error) {
	if isPostgres(cfg.DB) {
		st, err := postgres.Open(ctx, postgres.Config{URL: cfg.DB, Migrate: cfg.Migrate,
			VectorCacheBytes: cfg.VectorCacheBytes, PGVector: cfg.PGVector})
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	c := sqlite.Config{Path: cfg.DB, Sync: cfg.Sync, Migrate: cfg.Migrate, VectorCacheBytes: cfg.VectorCacheBytes,
		WALMaxBytes: cfg.WALMaxBytes}
	if serving {
		c.NoMessageIndex = !cfg.SearchIndex
	} else {
		// The server beside a one-shot command bounds the WAL; the command's
		// own RESTART or TRUNCATE would take the write lock from under the
		// server's writer. Its Close truncates the WAL as it always did.
		c.ReadConns, c.NoSearch, c.WALMaxBytes = 1, true, 0
	}
	if c.WALMaxBytes == 0 { // the flag's "no bound"; the store's 0 is its default
		c.WALMaxBytes = -1
	}
	st, err := sqlite.Open(ctx, c)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// displayDB is --db as logs and messages may show it: a URL without its password.
func displayDB(db string) string {
	if !isPostgres(db) {
		return db
	}
	u, err := url.Parse(db)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}

// logVectorSearch says how a PostgreSQL store searches passages by meaning,
// and why not through pgvector when --pgvector auto found it unusable.
func logVectorSearch(store repo.Store, log zerolog.Logger) {
	pg, ok := store.(*postgres.Store)
	if !ok {
		return
	}
	on, why := pg.PGVectorInUse()
	ev := log.Info().Bool("pgvector", on)
	if why != nil {
		ev = ev.Str("reason", why.Error())
	}
	ev.Msg("vector search")
}
