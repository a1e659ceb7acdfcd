package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	"modernc.org/sqlite"
)

// The conversation index lives in a database file of its own, beside the main
// one (searchIndexPath), written by the indexer goroutine (indexer.go) through a
// connection of its own. SQLite has one write lock per file: an index in the
// main file could only be written by the one writer, between other tenants'
// writes, and FTS5's merges made some of those index steps take tens of
// milliseconds. In its own file, indexing never holds the writer at all.
//
// Read connections attach the file as "idx", so a search joins idx.messages_fts
// with the messages in one statement.

// searchIndexPath is the index file of the database at path.
func searchIndexPath(path string) string { return path + "-search" }

// searchSchema is the index file's schema, version searchIndexVersion (the
// file's user_version). index_state is one row: which database it indexes, how
// far (every message below next_gid, and next_part parts of message next_gid),
// and how much of the main file's index_deletes it has applied. The scope
// column holds a row's tenant and session tokens (ftsscope.go).
const searchSchema = `
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content, scope, tenant_id UNINDEXED, session_id UNINDEXED, seq UNINDEXED,
    content = '', contentless_delete = 1, contentless_unindexed = 1, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS index_state (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    database_id  TEXT    NOT NULL,
    next_gid     INTEGER NOT NULL,
    next_part    INTEGER NOT NULL,
    deletes_upto INTEGER NOT NULL
);`

// searchIndexVersion is the layout searchSchema makes. A file of another
// version (1: no scope column, rowids of parts negative) is deleted and built
// again from the messages: the index is derived data, and rebuilding it costs
// the indexer's time (docs/operations.md, Upgrading) rather than a migration.
const searchIndexVersion = 2

// indexState is the index file's progress.
type indexState struct {
	databaseID  string
	nextGID     int64
	nextPart    int
	deletesUpto int64
}

// openSearchIndex opens (creating if needed) the index file for the indexer and
// checks that it indexes this database as it is now: an index left beside a
// restored backup, or beside another database, is emptied and rebuilt rather
// than answering for messages it never saw. The connection commits without an
// fsync: the index can always be rebuilt from the messages, and its progress is
// written in the same transactions as its rows, so a crash loses both together.
func openSearchIndex(ctx context.Context, mainPath string, main *sql.DB) (*sql.DB, indexState, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	path := searchIndexPath(mainPath)
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	idb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, indexState{}, fmt.Errorf("repo: open search index: %w", err)
	}
	idb.SetMaxOpenConns(1)
	idb.SetConnMaxIdleTime(0)
	var version int
	if err := idb.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		idb.Close()
		return nil, indexState{}, fmt.Errorf("repo: read search index version: %w", err)
	}
	if version != searchIndexVersion {
		// An older layout (or a new, empty file): start from an empty file.
		// Deleting it is instant where dropping a large FTS5 table is not.
		idb.Close()
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, indexState{}, fmt.Errorf("repo: remove the old search index: %w", err)
			}
		}
		if idb, err = sql.Open("sqlite", dsn); err != nil {
			return nil, indexState{}, fmt.Errorf("repo: open search index: %w", err)
		}
		idb.SetMaxOpenConns(1)
		idb.SetConnMaxIdleTime(0)
		if _, err := idb.ExecContext(ctx, searchSchema+fmt.Sprintf("PRAGMA user_version = %d;", searchIndexVersion)); err != nil {
			idb.Close()
			return nil, indexState{}, fmt.Errorf("repo: search index schema: %w", err)
		}
	}
	st, err := checkSearchIndex(ctx, idb, main)
	if err != nil {
		idb.Close()
		return nil, indexState{}, err
	}
	return idb, st, nil
}

func checkSearchIndex(ctx context.Context, idb, main *sql.DB) (indexState, error) {
	if _, err := idb.ExecContext(ctx, searchSchema); err != nil {
		return indexState{}, fmt.Errorf("repo: search index schema: %w", err)
	}
	var (
		dbID      string
		highWater int64
		deletes   int64
	)
	if err := main.QueryRowContext(ctx, `SELECT (SELECT value FROM meta WHERE key = 'database_id'),
		MAX(COALESCE((SELECT MAX(gid) FROM messages), 0), COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'gid_high_water'), 0)),
		COALESCE((SELECT MAX(id) FROM index_deletes), 0)`).Scan(&dbID, &highWater, &deletes); err != nil {
		return indexState{}, fmt.Errorf("repo: read the database's identity: %w", err)
	}
	var st indexState
	err := idb.QueryRowContext(ctx, `SELECT database_id, next_gid, next_part, deletes_upto FROM index_state WHERE id = 1`).
		Scan(&st.databaseID, &st.nextGID, &st.nextPart, &st.deletesUpto)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return indexState{}, fmt.Errorf("repo: read search index state: %w", err)
	}
	if err == nil && st.databaseID == dbID && st.nextGID <= highWater+1 && st.deletesUpto <= deletes {
		return st, nil
	}
	// New, or not this database's: start over. Deletions queued before now
	// concern nothing this index will hold.
	st = indexState{databaseID: dbID, nextGID: 0, nextPart: 0, deletesUpto: deletes}
	if _, err := idb.ExecContext(ctx, `INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')`); err != nil {
		return indexState{}, fmt.Errorf("repo: empty search index: %w", err)
	}
	if _, err := idb.ExecContext(ctx, `INSERT OR REPLACE INTO index_state (id, database_id, next_gid, next_part, deletes_upto)
		VALUES (1, ?, ?, ?, ?)`, st.databaseID, st.nextGID, st.nextPart, st.deletesUpto); err != nil {
		return indexState{}, fmt.Errorf("repo: reset search index: %w", err)
	}
	return st, nil
}

// attachingConnector opens read connections with the index file attached as idx.
type attachingConnector struct {
	driver.Connector
	indexPath string
}

func newReadConnector(connect func(string) (driver.Connector, error), dsn, indexPath string) (driver.Connector, error) {
	c, err := connect(dsn)
	if err != nil {
		return nil, err
	}
	return attachingConnector{Connector: c, indexPath: indexPath}, nil
}

func (a attachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := a.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, errors.New("repo: the sqlite driver's connections cannot execute")
	}
	if _, err := ex.ExecContext(ctx, `ATTACH DATABASE ? AS idx`, []driver.NamedValue{{Ordinal: 1, Value: a.indexPath}}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("repo: attach the search index: %w", err)
	}
	return conn, nil
}

// noteDeletedMessages queues the index rows of a session's messages with seq in
// (after, upto] for removal by the indexer, and keeps the gid high-water mark,
// so that no gid is ever handed out twice: the index takes every gid below its
// progress as done, and a reused one would never be indexed.
func (s *Store) noteDeletedMessages(ctx context.Context, tx *sql.Tx, tenant, session string, after, upto int64) error {
	s.usage.invalidate() // the usage folder reads back what is left (usagefold.go)
	if _, err := tx.ExecContext(ctx, `DELETE FROM index_deletes WHERE id <= ?`, s.deletesApplied.Load()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO index_deletes (gid, bytes)
		SELECT gid, octet_length(content) FROM messages
		WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ?`, tenant, session, after, upto); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('gid_high_water', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, itoa(s.gid))
	return err
}

// mustConnector is a plain connector for a DSN this package built.
func mustConnector(dsn string) driver.Connector {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		panic(fmt.Sprintf("repo: connector for %s: %v", dsn, err))
	}
	return c
}

// readIndexState reads the index file's progress (for tests and benchmarks that
// drive the indexer's steps themselves).
func (s *Store) readIndexState(ctx context.Context) (indexState, error) {
	var st indexState
	err := s.idb.QueryRowContext(ctx, `SELECT database_id, next_gid, next_part, deletes_upto FROM index_state WHERE id = 1`).
		Scan(&st.databaseID, &st.nextGID, &st.nextPart, &st.deletesUpto)
	return st, err
}
