package sqlite

import (
	"database/sql"
	"strings"
	"testing"
)

// explainPlan reads the rows of an EXPLAIN QUERY PLAN, one step a line.
func explainPlan(t *testing.T, rows *sql.Rows) string {
	t.Helper()
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
