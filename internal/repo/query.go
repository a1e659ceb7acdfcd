package repo

import (
	"strings"
	"unicode"
)

// MaxQueryTerms bounds the work one search can ask of an index.
const MaxQueryTerms = 32

// QueryTerms are the words of what a user or a model typed into a search, lower
// case, each once, at most MaxQueryTerms: runs of letters and digits, so that
// quotes, operators or SQL in the input are never anything but word breaks.
// Each backend joins them into its own query language (FTS5, tsquery) with OR,
// so that text matching more of them ranks higher.
func QueryTerms(q string) []string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	seen := make(map[string]bool, len(words))
	var out []string
	for _, w := range words {
		w = strings.ToLower(w)
		if seen[w] || len(out) == MaxQueryTerms {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}
