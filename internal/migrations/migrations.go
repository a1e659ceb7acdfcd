// Package migrations embeds Logbook's goose SQL migrations, one folder per
// dialect, so that the binary carries its own schema. The two describe the same
// tables, columns and indexes (internal/repo/postgres's schema test compares
// them); each says it in its own SQL.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed sqlite/*.sql postgres/*.sql
var all embed.FS

// SQLite and Postgres hold each dialect's *.sql migrations, applied in
// file-name order.
var (
	SQLite   = sub("sqlite")
	Postgres = sub("postgres")
)

func sub(dir string) fs.FS {
	f, err := fs.Sub(all, dir)
	if err != nil {
		panic(err) // the folders are embedded above: cannot happen
	}
	return f
}
