package sqlite

import (
	"strings"

	"github.com/logbook/logbook/internal/repo"
)

// ftsQuery turns what a user or a model typed into a safe FTS5 expression: each
// word becomes a quoted phrase, joined by OR so that passages matching more words
// rank higher (bm25). Quotes, AND, NEAR(, *, :, column filters or SQL in the input
// are only ever words inside quotes, so no input can be an FTS5 syntax error.
// It returns "" when the input has no word to search for.
func ftsQuery(q string) string {
	var b strings.Builder
	for i, t := range repo.QueryTerms(q) {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + t + `"`) // a word holds no '"': QueryTerms split on it
	}
	return b.String()
}
