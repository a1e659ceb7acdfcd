package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/migrations"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// schema is what must not drift between the dialects: each table's columns
// (name and NOT NULL) and primary key, and each declared index (its columns and
// whether it is unique).
type schema struct {
	tables  map[string][]string // table → "column" or "column NOT NULL", sorted
	pkeys   map[string]string   // table → primary key columns, in order
	indexes map[string]string   // name → "table(columns)", "UNIQUE " first when unique
}

// What only one dialect has, and why. Anything else that differs fails the test.
var (
	onlySQLite = map[string]string{
		"table index_deletes":                "the SQLite search indexer's queue (its index is a separate file)",
		"table meta":                         "the SQLite search indexer's bookkeeping",
		"table passages_fts":                 "FTS5; PostgreSQL searches passages.tsv",
		"table passages_fts_config":          "FTS5's shadow table",
		"table passages_fts_data":            "FTS5's shadow table",
		"table passages_fts_docsize":         "FTS5's shadow table",
		"table passages_fts_idx":             "FTS5's shadow table",
		"table sqlite_sequence":              "SQLite's AUTOINCREMENT bookkeeping",
		"table session_titles":               "the title filter's trigram index needs an integer rowid, which sessions lack (PostgreSQL: index sessions_by_title)",
		"index session_titles_by_id":         "of session_titles, SQLite's own",
		"table session_titles_fts":           "FTS5 trigram index of session_titles",
		"table session_titles_fts_config":    "FTS5's shadow table",
		"table session_titles_fts_data":      "FTS5's shadow table",
		"table session_titles_fts_docsize":   "FTS5's shadow table",
		"table session_titles_fts_idx":       "FTS5's shadow table",
		"pkey events":                        "SQLite's pos is the rowid; PostgreSQL numbers events after commit (events.go)",
		"column events.pos":                  "NOT NULL: the rowid, a gid; on PostgreSQL pos is NULL until the sequencer numbers the event",
		"column messages.in_feed":            "SQLite's message events are the messages (events.go): those a session did not append are none",
		"pkey goose_db_version":              "goose's own table, created by goose per dialect",
		"column goose_db_version.tstamp":     "goose's own table",
		"column goose_db_version.id":         "goose's own table",
		"column goose_db_version.version_id": "goose's own table",
		"column goose_db_version.is_applied": "goose's own table",
	}
	onlyPostgres = map[string]string{
		"table message_search":               "conversation search as tsvector parts (SQLite keeps it in <db>-search)",
		"column passages.tsv":                "archival search as a tsvector (SQLite: passages_fts)",
		"index message_search_tsv":           "GIN index of message_search",
		"index passages_tsv":                 "GIN index of passages.tsv",
		"index sessions_by_title":            "trigram GIN index of the folded title (SQLite: session_titles_fts)",
		"pkey events":                        "events.id, in allocation order; pos is given later, in commit order",
		"column events.id":                   "the allocation order the sequencer numbers by",
		"index events_pos":                   "pos is a column of its own here (the rowid on SQLite)",
		"index events_unsequenced":           "the sequencer's work list",
		"table event_sequencer":              "the sequencer's last pos, and its lock",
		"column events.message_id":           "a message's event is a row here; on SQLite it is the message itself",
		"column events.seq":                  "a message's event is a row here; on SQLite it is the message itself",
		"index events_by_seq":                "a message's event is a row here; on SQLite it is the message itself",
		"pkey goose_db_version":              "goose's own table, created by goose per dialect",
		"column goose_db_version.tstamp":     "goose's own table",
		"column goose_db_version.id":         "goose's own table",
		"column goose_db_version.version_id": "goose's own table",
		"column goose_db_version.is_applied": "goose's own table",
	}
)

func TestSchemasDoNotDrift(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.Start(t)
	if err := postgres.Migrate(ctx, cluster.URL("postgres"), "up", io.Discard); err != nil {
		t.Fatal(err)
	}
	pg, err := sql.Open("pgx", cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	path := filepath.Join(t.TempDir(), "l.db")
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	lite, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()

	a, b := flatten(readSQLite(t, lite)), flatten(readPostgres(t, pg))
	for _, k := range a {
		if !slices.Contains(b, k) && !excused(onlySQLite, k) {
			t.Errorf("SQLite has %s; PostgreSQL does not (add it to internal/migrations/postgres)", k)
		}
	}
	for _, k := range b {
		if !slices.Contains(a, k) && !excused(onlyPostgres, k) {
			t.Errorf("PostgreSQL has %s; SQLite does not", k)
		}
	}
	if t.Failed() {
		t.Logf("a difference that is meant to be goes in onlySQLite or onlyPostgres, with its reason")
	}

	// Down, once per migration, undoes the schema whole, and up builds it again.
	steps, err := fs.Glob(migrations.Postgres, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for range steps {
		if err := postgres.Migrate(ctx, cluster.URL("postgres"), "down", io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	if left := queryStrings(t, pg, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name <> 'goose_db_version'`); len(left) != 0 {
		t.Errorf("tables left after down: %v", left)
	}
	if err := postgres.Migrate(ctx, cluster.URL("postgres"), "up", io.Discard); err != nil {
		t.Fatal(err)
	}
}

// excused reports whether fact k is one of a dialect's own: itself, without
// its " = …" part, or anything of a table that is the dialect's own.
func excused(only map[string]string, k string) bool {
	fact, _, _ := strings.Cut(k, " =")
	kind, name, _ := strings.Cut(fact, " ")
	table, _, _ := strings.Cut(name, ".")
	return only[fact] != "" || only["table "+table] != "" || (kind != "table" && only["table "+table] != "")
}

// flatten lists a schema as comparable facts: "table X", "column X.c", "pkey X = …", "index i = …".
func flatten(s schema) []string {
	var out []string
	for tbl, cols := range s.tables {
		out = append(out, "table "+tbl)
		for _, c := range cols {
			name, rest, _ := strings.Cut(c, " ")
			out = append(out, "column "+tbl+"."+name)
			if rest != "" {
				out = append(out, "column "+tbl+"."+name+" = "+rest)
			}
		}
	}
	for tbl, pk := range s.pkeys {
		out = append(out, "pkey "+tbl+" = "+pk)
	}
	for name, def := range s.indexes {
		out = append(out, "index "+name+" = "+def)
	}
	slices.Sort(out)
	return out
}

func readSQLite(t *testing.T, db *sql.DB) schema {
	s := schema{tables: map[string][]string{}, pkeys: map[string]string{}, indexes: map[string]string{}}
	tables := queryStrings(t, db, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	for _, tbl := range tables {
		rows, err := db.Query(fmt.Sprintf(`SELECT name, "notnull", pk FROM pragma_table_info('%s') ORDER BY pk`, tbl))
		if err != nil {
			t.Fatal(err)
		}
		var pk []string
		for rows.Next() {
			var name string
			var notNull, pkn int
			if err := rows.Scan(&name, &notNull, &pkn); err != nil {
				t.Fatal(err)
			}
			// A primary key column is NOT NULL on PostgreSQL whatever it says.
			if notNull == 1 || pkn > 0 {
				name += " NOT NULL"
			}
			s.tables[tbl] = append(s.tables[tbl], name)
			if pkn > 0 {
				pk = append(pk, strings.Fields(name)[0])
			}
		}
		rows.Close()
		slices.Sort(s.tables[tbl])
		if len(pk) > 0 {
			s.pkeys[tbl] = strings.Join(pk, ", ")
		}
	}
	idx, err := db.Query(`SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	for idx.Next() {
		var name, tbl, def string
		if err := idx.Scan(&name, &tbl, &def); err != nil {
			t.Fatal(err)
		}
		cols := queryStrings(t, db, fmt.Sprintf(`SELECT name FROM pragma_index_info('%s') ORDER BY seqno`, name))
		key := tbl + "(" + strings.Join(cols, ", ") + ")"
		if strings.HasPrefix(strings.ToUpper(def), "CREATE UNIQUE") {
			key = "UNIQUE " + key
		}
		s.indexes[name] = key
	}
	return s
}

func readPostgres(t *testing.T, db *sql.DB) schema {
	s := schema{tables: map[string][]string{}, pkeys: map[string]string{}, indexes: map[string]string{}}
	rows, err := db.Query(`SELECT table_name, column_name, is_nullable FROM information_schema.columns
		WHERE table_schema = 'public' ORDER BY table_name, column_name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, col, nullable string
		if err := rows.Scan(&tbl, &col, &nullable); err != nil {
			t.Fatal(err)
		}
		if nullable == "NO" {
			col += " NOT NULL"
		}
		s.tables[tbl] = append(s.tables[tbl], col)
	}
	rows.Close()
	for tbl := range s.tables {
		slices.Sort(s.tables[tbl])
	}
	pk, err := db.Query(`SELECT tc.table_name, string_agg(k.column_name, ', ' ORDER BY k.ordinal_position)
		FROM information_schema.table_constraints tc
		JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name AND k.table_name = tc.table_name
		WHERE tc.table_schema = 'public' AND tc.constraint_type = 'PRIMARY KEY' GROUP BY tc.table_name`)
	if err != nil {
		t.Fatal(err)
	}
	for pk.Next() {
		var tbl, cols string
		if err := pk.Scan(&tbl, &cols); err != nil {
			t.Fatal(err)
		}
		s.pkeys[tbl] = cols
	}
	pk.Close()
	// Declared indexes only: those that back a constraint (primary keys,
	// UNIQUE (…) in a table) are compared as such, or are SQLite's autoindexes.
	idx, err := db.Query(`SELECT i.relname, t.relname, ix.indisunique,
			(SELECT string_agg(a.attname, ', ' ORDER BY k.n) FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, n)
			 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum)
		FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
		JOIN pg_namespace ns ON ns.oid = t.relnamespace
		WHERE ns.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid)`)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	for idx.Next() {
		var name, tbl string
		var unique bool
		var cols sql.NullString
		if err := idx.Scan(&name, &tbl, &unique, &cols); err != nil {
			t.Fatal(err)
		}
		key := tbl + "(" + cols.String + ")"
		if unique {
			key = "UNIQUE " + key
		}
		s.indexes[name] = key
	}
	return s
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
