package sqlite

import (
	"context"
	"testing"
)

// FuzzFTSQuery runs sanitized queries against a real FTS5 index: no input, however
// much FTS5 or SQL syntax it holds, may make the query fail.
func FuzzFTSQuery(f *testing.F) {
	for _, seed := range []string{`"unbalanced`, `a AND b OR NOT c`, `NEAR(a b, 3)`, `pre*`, `content:x`,
		`'); DROP TABLE passages; --`, `^start`, `a + b - c`, `{col1 col2}: x`, "ünïcödé 日本語", ``} {
		f.Add(seed)
	}
	s := mustOpen(f)
	ctx := context.Background()
	if _, err := s.idb.ExecContext(ctx, `INSERT INTO messages_fts (content, tenant_id, session_id, seq) VALUES ('some text to find', 't', 's', 1)`); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		expr := ftsQuery(q)
		if expr == "" {
			return
		}
		rows, err := s.rdb.QueryContext(ctx, `SELECT rowid FROM idx.messages_fts WHERE messages_fts MATCH ?`, expr)
		if err != nil {
			t.Fatalf("query %q → %q: %v", q, expr, err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("query %q → %q: %v", q, expr, err)
		}
		rows.Close()
	})
}
