package repo

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The message index stores no copy of the text (a contentless FTS5 table: the
// messages are the only copy), so FTS5's snippet() has nothing to cut from, and
// snippets are made here from the message itself.

const snippetWords = 16

type wordSpan struct{ start, end int }

func words(s string) []wordSpan {
	var out []wordSpan
	start := -1
	for i, r := range s {
		isWord := unicode.IsLetter(r) || unicode.IsNumber(r)
		switch {
		case isWord && start < 0:
			start = i
		case !isWord && start >= 0:
			out = append(out, wordSpan{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, wordSpan{start, len(s)})
	}
	return out
}

// stem strips the English endings that the index's porter stemmer folds, well
// enough to find which words of a hit to mark.
func stem(w string) string {
	w = strings.ToLower(w)
	for _, suffix := range []string{"ing", "ed", "es", "s", "ly"} {
		if len(w) > len(suffix)+2 && strings.HasSuffix(w, suffix) {
			w = w[:len(w)-len(suffix)]
			// running → runn → run, as porter undoubles
			if n := len(w); n > 2 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
				w = w[:n-1]
			}
			return w
		}
	}
	return w
}

// Snippet returns up to 16 words of text around its first word that matches the
// query, with matching words in [brackets], as FTS5's snippet() marks them.
func Snippet(text, query string) string {
	ws := words(text)
	if len(ws) == 0 {
		return ""
	}
	terms := map[string]bool{}
	for _, q := range words(query) {
		terms[stem(query[q.start:q.end])] = true
	}
	match := func(w wordSpan) bool { return terms[stem(text[w.start:w.end])] }
	first := 0
	for i, w := range ws {
		if match(w) {
			first = i
			break
		}
	}
	from := max(0, first-snippetWords/3)
	to := min(len(ws), from+snippetWords)
	from = max(0, to-snippetWords)

	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	pos := ws[from].start
	for _, w := range ws[from:to] {
		b.WriteString(text[pos:w.start])
		if match(w) {
			b.WriteString("[" + text[w.start:w.end] + "]")
		} else {
			b.WriteString(text[w.start:w.end])
		}
		pos = w.end
	}
	if to < len(ws) {
		b.WriteString("…")
	} else {
		b.WriteString(text[pos:])
	}
	out := b.String()
	if !utf8.ValidString(out) {
		return strings.ToValidUTF8(out, "")
	}
	return out
}
