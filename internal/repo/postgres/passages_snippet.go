package postgres

import (
	"strings"
	"unicode"
)

// SQLite's passage snippets are FTS5's snippet(…, '[', ']', '…', 16). Here
// PostgreSQL says which words match (ts_headline marks every match, with
// private-use characters that passages do not contain in practice), and the
// 16-word window, the brackets and the ellipses are made here, as FTS5 makes
// them.
const (
	passageMarkStart       = "\uE000"
	passageMarkStop        = "\uE001"
	passageHeadlineOptions = "HighlightAll=true, StartSel=" + passageMarkStart + ", StopSel=" + passageMarkStop
	passageSnippetWords    = 16
)

type passageWord struct {
	start, end int
	match      bool
}

// passageWords splits text into runs of letters and digits (FTS5's unicode61
// tokens), each a match when it overlaps one of the marked byte ranges.
func passageWords(text string, marks [][2]int) []passageWord {
	var out []passageWord
	start := -1
	end := func(i int) {
		w := passageWord{start: start, end: i}
		for len(marks) > 0 && marks[0][1] <= w.start {
			marks = marks[1:]
		}
		w.match = len(marks) > 0 && marks[0][0] < w.end
		out = append(out, w)
		start = -1
	}
	for i, r := range text {
		isWord := unicode.IsLetter(r) || unicode.IsNumber(r)
		switch {
		case isWord && start < 0:
			start = i
		case !isWord && start >= 0:
			end(i)
		}
	}
	if start >= 0 {
		end(len(text))
	}
	return out
}

// passageUnmark removes ts_headline's marks, returning the text and the byte
// ranges (in the text) that were marked, in order.
func passageUnmark(marked string) (string, [][2]int) {
	var (
		b     strings.Builder
		marks [][2]int
	)
	b.Grow(len(marked))
	for {
		i := strings.Index(marked, passageMarkStart)
		if i < 0 {
			b.WriteString(marked)
			return b.String(), marks
		}
		b.WriteString(marked[:i])
		marked = marked[i+len(passageMarkStart):]
		j := strings.Index(marked, passageMarkStop)
		if j < 0 {
			j = len(marked)
		}
		from := b.Len()
		b.WriteString(marked[:j])
		marks = append(marks, [2]int{from, b.Len()})
		marked = marked[min(j+len(passageMarkStop), len(marked)):]
	}
}

// passageSnippet cuts a 16-word window out of a headline as FTS5's snippet()
// does (fts5SnippetFunction in SQLite's fts5_aux.c): it scores a window by
// 1000 for each query word it holds and 1 for each repeat, centres the
// matches in the best one, and prefers a window that starts a sentence.
// Matching words are in [brackets], and … stands where the passage goes on.
// Which query word a match is FTS5 knows and PostgreSQL's marks do not say;
// passageStem guesses it.
func passageSnippet(marked string) string {
	text, marks := passageUnmark(marked)
	ws := passageWords(text, marks)
	if len(ws) == 0 {
		return ""
	}
	n := passageSnippetWords
	from := passageWindow(text, ws, n)
	to := min(len(ws), from+n)

	var b strings.Builder
	pos := 0
	if from > 0 {
		b.WriteString("…")
		pos = ws[from].start
	}
	for _, w := range ws[from:to] {
		b.WriteString(text[pos:w.start])
		if w.match {
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
	return b.String()
}

// passageWindow is the first word of the best window of n words.
func passageWindow(text string, ws []passageWord, n int) int {
	if len(ws) <= n {
		return 0
	}
	firsts := passageSentenceStarts(text, ws)
	best, bestScore := 0, 0
	for at, w := range ws {
		if !w.match {
			continue
		}
		if score, adj := passageWindowScore(text, ws, at, n); score > bestScore {
			best, bestScore = adj, score
		}
		jj := 0
		for jj < len(firsts)-1 && firsts[jj+1] <= at {
			jj++
		}
		if first := firsts[jj]; first < at {
			score, _ := passageWindowScore(text, ws, first, n)
			score += 100
			if first == 0 {
				score += 20
			}
			if score > bestScore {
				best, bestScore = first, score
			}
		}
	}
	return best
}

// passageWindowScore scores the n words from at, and says where the window
// would start with its matches centred.
func passageWindowScore(text string, ws []passageWord, at, n int) (score, adj int) {
	seen := map[string]bool{}
	first, last := -1, 0
	for i := at; i < min(at+n, len(ws)); i++ {
		if !ws[i].match {
			continue
		}
		stem := passageStem(text[ws[i].start:ws[i].end])
		if seen[stem] {
			score++
		} else {
			score += 1000
		}
		seen[stem] = true
		if first < 0 {
			first = i
		}
		last = i + 1
	}
	adj = first - (n-(last-first))/2
	return score, max(0, min(adj, len(ws)-n))
}

// passageSentenceStarts lists the words that start a sentence as FTS5 sees
// it: the first, and each after whitespace that follows a '.' or ':'.
func passageSentenceStarts(text string, ws []passageWord) []int {
	out := []int{0}
	for i := 1; i < len(ws); i++ {
		before := text[ws[i-1].end:ws[i].start]
		trimmed := strings.TrimRight(before, " \t\n\r")
		if len(trimmed) < len(before) && (strings.HasSuffix(trimmed, ".") || strings.HasSuffix(trimmed, ":")) {
			out = append(out, i)
		}
	}
	return out
}

// passageStem folds the English endings that both stemmers fold, well enough
// to tell one query word's matches from another's.
func passageStem(w string) string {
	w = strings.ToLower(w)
	for _, suffix := range []string{"ing", "ed", "es", "s", "ly"} {
		if len(w) > len(suffix)+2 && strings.HasSuffix(w, suffix) {
			return w[:len(w)-len(suffix)]
		}
	}
	return w
}
