package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/logbook/logbook/internal/migrations"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // the same pure-Go driver Logbook uses
)

// openSQLite opens a database file with Logbook's durability settings (WAL,
// synchronous=FULL, foreign keys on) and Logbook's own schema, so that the
// baselines store exactly the rows Logbook stores, in the same tables and indexes.
//
// immediate makes BEGIN take the write lock at once. A plain deferred BEGIN that
// reads and then writes fails with SQLITE_BUSY (no waiting) when another connection
// committed in between, so any multi-connection writer that wants busy_timeout to
// queue it rather than fail needs this.
func openSQLite(ctx context.Context, path string, immediate bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	if immediate {
		q.Set("_txlock", "immediate")
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.SQLite)
	if err == nil {
		_, err = p.Up(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return db, nil
}
