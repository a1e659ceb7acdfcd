package sqlite

import (
	"strings"
	"unicode"
)

// maxQueryTerms bounds the work one search can ask of the index.
const maxQueryTerms = 32

// ftsQuery turns what a user or a model typed into a safe FTS5 expression: each
// word becomes a quoted phrase, joined by OR so that passages matching more words
// rank higher (bm25). Quotes, AND, NEAR(, *, :, column filters or SQL in the input
// are only ever words inside quotes, so no input can be an FTS5 syntax error.
// It returns "" when the input has no word to search for.
func ftsQuery(q string) string {
	terms := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	seen := make(map[string]bool, len(terms))
	var b strings.Builder
	n := 0
	for _, t := range terms {
		t = strings.ToLower(t)
		if seen[t] || n == maxQueryTerms {
			continue
		}
		seen[t] = true
		if n > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + t + `"`) // a word holds no '"': FieldsFunc split on it
		n++
	}
	return b.String()
}
