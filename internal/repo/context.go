package repo

import (
	"slices"

	"github.com/logbook/logbook/internal/model"
)

// Segment is a run of a session's history as stored: the messages of Owner
// with seq in (Lo, Hi]. A fork's history is its parent's first forked_at_seq
// messages (shared, not copied) followed by its own.
type Segment struct {
	Owner  string
	Lo, Hi int64
}

// WindowReader reads a lineage's messages for a context window, all from one
// snapshot; each backend says how (SQLite through the read pool's prepared
// statements, PostgreSQL in as few round trips as it can).
type WindowReader interface {
	// NewestFirst reads up to n of owner's messages in (lo, hi], newest first.
	NewestFirst(owner string, lo, hi int64, n int) ([]model.Message, error)
	// Systems are the lineage's system and developer messages up to seq, in order.
	Systems(upto int64) ([]model.Message, error)
	// CumTokens are the session's running token totals at seqs a and b (0 at 0).
	CumTokens(a, b int64) (int64, int64, error)
	// Messages are the lineage's messages in (after, upto], in order.
	Messages(after, upto int64) ([]model.Message, error)
}

// FillContext fills out (whose Compaction is set, if the session has one)
// with the messages after the compaction, as Context answers them: all of
// them, or with q.MaxTokens every system and developer message (first, those
// from before the window) and the newest messages that fit beside them and
// the summary, by their tokens. The window never starts with a tool result
// cut off from its call. Both backends' Context fill it through here.
func FillContext(r WindowReader, segs []Segment, out *model.Context, ses model.Session, q model.ContextQuery) error {
	from := int64(0) // the window starts after this seq
	if out.Compaction != nil {
		from = out.Compaction.ThroughSeq
		out.Tokens = out.Compaction.Tokens
	}
	if q.MaxTokens == nil {
		msgs, err := r.Messages(from, ses.LastSeq)
		if err != nil {
			return err
		}
		out.Messages = msgs
	} else if err := fit(r, segs, out, from, ses.LastSeq, *q.MaxTokens, ses.TotalTokens); err != nil {
		return err
	}
	for _, m := range out.Messages {
		out.Tokens += m.Tokens
	}
	return nil
}

// fit fills out with what max tokens allow of the messages after from: it
// reads the history backwards from last, a chunk at a time, until the next
// message would not fit, so that it reads about as many rows as it returns.
func fit(r WindowReader, segs []Segment, out *model.Context, from, last, budget, total int64) error {
	systems, err := r.Systems(last)
	if err != nil {
		return err
	}
	fixed := out.Tokens
	for _, m := range systems {
		fixed += m.Tokens
	}
	var tail []model.Message // newest first
	k := last                // the window is (k, last]
	if fixed > budget {
		out.OverBudget = true
	} else {
		room := budget - fixed
		n := 0 // the last chunk's size: a guess that fell short doubles
	read:
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			hi := min(k, g.Hi)
			for hi > max(from, g.Lo) {
				lo := max(from, g.Lo)
				n = min(128, max(2*n, chunkGuess(room, total, last)))
				chunk, err := r.NewestFirst(g.Owner, lo, hi, n)
				if err != nil {
					return err
				}
				if len(chunk) == 0 {
					break
				}
				for _, m := range chunk {
					if m.Role != model.RoleSystem && m.Role != model.RoleDeveloper {
						if m.Tokens > room {
							break read
						}
						room -= m.Tokens
					}
					tail = append(tail, m)
					k = m.Seq - 1
				}
				hi = k
			}
		}
	}
	slices.Reverse(tail)
	// A tool result whose call fell out of the window cannot start it.
	for len(tail) > 0 && tail[0].Role == model.RoleTool {
		k, tail = tail[0].Seq, tail[1:]
	}
	// Systems inside the window stand in it; those before it come first.
	for _, m := range systems {
		if m.Seq <= k {
			out.Messages = append(out.Messages, m)
		}
	}
	out.Messages = append(out.Messages, tail...)
	// Left out: the messages in (from, k] that are not system ones.
	if k > from {
		cumFrom, cumK, err := r.CumTokens(from, k)
		if err != nil {
			return err
		}
		o := model.ContextOmitted{Messages: k - from, Tokens: cumK - cumFrom}
		for _, m := range systems {
			if m.Seq > from && m.Seq <= k {
				o.Messages--
				o.Tokens -= m.Tokens
			}
		}
		if o.Messages > 0 {
			first, lastSeq := from+1, k
			o.FirstSeq, o.LastSeq = &first, &lastSeq
		}
		out.Omitted = o
	}
	return nil
}

// chunkGuess is how many of the newest messages room likely holds, from the
// session's average message, with a margin: most reads then take one query
// that decodes a few rows more than they return, not 128. A wrong guess costs
// another chunk (twice as large), never a wrong answer.
func chunkGuess(room, total, last int64) int {
	avg := max(1, total/max(1, last))
	return int(min(room/avg+room/avg/4+8, 128))
}
