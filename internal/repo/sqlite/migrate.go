package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io"

	"github.com/logbook/logbook/internal/migrations"
	"github.com/pressly/goose/v3"
)

func provider(db *sql.DB) (*goose.Provider, error) {
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.SQLite)
	if err != nil {
		return nil, fmt.Errorf("repo: migrations: %w", err)
	}
	return p, nil
}

// MigrateUp applies every pending migration.
func MigrateUp(ctx context.Context, db *sql.DB) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("repo: migrate up: %w", err)
	}
	return nil
}

// Migrate runs a migration command ("status", "up" or "down") against the database
// at path and reports what it did to w. It opens its own connection, so it works
// with or without a running server (the server's writer holds no lock between
// transactions).
func Migrate(ctx context.Context, path, command string, w io.Writer) error {
	db, err := sql.Open("sqlite", dsn(path, false, "FULL"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	p, err := provider(db)
	if err != nil {
		return err
	}
	switch command {
	case "status":
		st, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("repo: migrate status: %w", err)
		}
		for _, s := range st {
			applied := "pending"
			if s.State == goose.StateApplied {
				applied = "applied " + s.AppliedAt.UTC().Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(w, "%05d  %-40s  %s\n", s.Source.Version, s.Source.Path, applied)
		}
	case "up":
		res, err := p.Up(ctx)
		if err != nil {
			return fmt.Errorf("repo: migrate up: %w", err)
		}
		if len(res) == 0 {
			fmt.Fprintln(w, "no pending migrations")
		}
		for _, r := range res {
			fmt.Fprintf(w, "applied %05d %s (%s)\n", r.Source.Version, r.Source.Path, r.Duration)
		}
	case "down":
		r, err := p.Down(ctx)
		if err != nil {
			return fmt.Errorf("repo: migrate down: %w", err)
		}
		fmt.Fprintf(w, "rolled back %05d %s\n", r.Source.Version, r.Source.Path)
	default:
		return fmt.Errorf("unknown migrate command %q (want status, up or down)", command)
	}
	return nil
}
