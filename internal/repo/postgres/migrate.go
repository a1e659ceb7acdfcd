// Package postgres is the PostgreSQL backend: for teams that need a standby,
// several Logbook processes on one database, or a database their operators
// already run. Store implements repo.Store; appends to one session from every
// goroutine of a process gather into group commits (appends_queue.go), and
// processes take turns on the session's row lock.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"io"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for goose
	"github.com/logbook/logbook/internal/migrations"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrate applies the PostgreSQL migrations to the database at url: "up" (all
// pending), "down" (the latest), or "status", reporting to w.
func Migrate(ctx context.Context, url, command string, w io.Writer) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	// Several Logbook processes may start on one database at once: an advisory
	// lock lets one migrate while the others wait, then find nothing to do.
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.Postgres, goose.WithSessionLocker(locker))
	if err != nil {
		return err
	}
	switch command {
	case "up":
		res, err := p.Up(ctx)
		for _, r := range res {
			fmt.Fprintf(w, "applied %s\n", r.Source.Path)
		}
		return err
	case "down":
		r, err := p.Down(ctx)
		if r != nil {
			fmt.Fprintf(w, "rolled back %s\n", r.Source.Path)
		}
		return err
	case "status":
		st, err := p.Status(ctx)
		if err != nil {
			return err
		}
		for _, s := range st {
			fmt.Fprintf(w, "%-8s %s\n", s.State, s.Source.Path)
		}
		return nil
	}
	return fmt.Errorf("migrate: unknown command %q (up, down, status)", command)
}
