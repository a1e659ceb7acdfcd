package sqlite

import (
	"context"
	"database/sql"
	"slices"

	"github.com/logbook/logbook/internal/model"
)

// Context is what the next LLM call needs, from one snapshot: the latest
// compaction, then the messages after it. With MaxTokens it keeps every system
// and developer message (first, those from before the window) and the newest
// messages that fit beside them and the summary, by their tokens; the window
// never starts with a tool result cut off from its call. Errors: KindNotFound.
func (s *Store) Context(ctx context.Context, tenant, id string, q model.ContextQuery) (model.Context, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Context{}, mapErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	w := window{ctx: ctx, tx: tx, st: &s.rst, tenant: tenant, id: id}
	out, err := w.read(q)
	return out, mapErr(err)
}

func (w *window) read(q model.ContextQuery) (model.Context, error) {
	ses, err := scanSession(w.stmt(w.st.session).QueryRowContext(w.ctx, w.tenant, w.id))
	if err == nil && ses.Expired(model.Now()) { // hidden until a purge erases it, as getSession has it
		err = sql.ErrNoRows
	}
	if err == sql.ErrNoRows {
		return model.Context{}, model.NotFound("session", w.id)
	}
	if err != nil {
		return model.Context{}, err
	}
	out := model.Context{SessionID: w.id, LastSeq: ses.LastSeq, MaxTokens: q.MaxTokens, Messages: []model.Message{}}
	c, err := scanCompaction(w.stmt(w.st.latestCompaction).QueryRowContext(w.ctx, w.tenant, w.id))
	switch {
	case err == nil:
		out.Compaction = &c
	case err != sql.ErrNoRows:
		return out, err
	}
	from := int64(0) // the window starts after this seq
	if out.Compaction != nil {
		from = out.Compaction.ThroughSeq
		out.Tokens = out.Compaction.Tokens
	}
	// The walk runs in this snapshot rather than from the lineage cache: the
	// cache may already know a purge or fork this snapshot does not.
	rows, err := w.stmt(w.st.lineage).QueryContext(w.ctx, w.tenant, w.id)
	if err != nil {
		return out, err
	}
	if w.segs, _, _, err = segmentsOf(rows, w.id); err != nil {
		return out, err
	}
	if q.MaxTokens == nil {
		msgs, err := w.messages(from, ses.LastSeq)
		if err != nil {
			return out, err
		}
		out.Messages = msgs
	} else if err := w.fit(&out, from, ses.LastSeq, *q.MaxTokens, ses.TotalTokens); err != nil {
		return out, err
	}
	for _, m := range out.Messages {
		out.Tokens += m.Tokens
	}
	if q.IncludeBlocks {
		out.Blocks = []model.Block{}
		if ses.AgentID != nil {
			rows, err := w.stmt(w.st.blocks).QueryContext(w.ctx, w.tenant, *ses.AgentID)
			if err != nil {
				return out, err
			}
			if out.Blocks, err = collectN(rows, 8, scanAgentBlock); err != nil {
				return out, err
			}
			r := blockReader{ctx: w.ctx, tx: w.tx, st: w.st}
			if err := fillShared(w.ctx, r, w.tenant, out.Blocks); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// window reads a lineage's messages within one snapshot. Its statements are
// the read pool's prepared ones: parsing them for every read was a quarter of
// a context read's CPU.
type window struct {
	ctx        context.Context
	tx         *sql.Tx
	st         *readStatements
	tenant, id string
	segs       []segment
	row        *messageRow
}

func (w *window) stmt(s *sql.Stmt) *sql.Stmt { return w.tx.StmtContext(w.ctx, s) }

// scan reads rows as messages of the session the window belongs to: inherited
// ones read as the fork's own, as on every other read.
func (w *window) scan(rows *sql.Rows, n int) ([]model.Message, error) {
	if w.row == nil {
		w.row = newMessageRow()
	}
	ms, err := collectN(rows, n, w.row.scan)
	for i := range ms {
		ms[i].SessionID = w.id
	}
	return ms, err
}

// fit fills out with what max tokens allow of the messages after from: it
// reads the history backwards from last, a chunk at a time, until the next
// message would not fit, so that it reads about as many rows as it returns.
func (w *window) fit(out *model.Context, from, last, budget, total int64) error {
	systems, err := w.systems(last)
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
		for i := len(w.segs) - 1; i >= 0; i-- {
			g := w.segs[i]
			hi := min(k, g.hi)
			for hi > max(from, g.lo) {
				lo := max(from, g.lo)
				n = min(128, max(2*n, chunkGuess(room, total, last)))
				chunk, err := w.newestFirst(g.owner, lo, hi, n)
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
		cumFrom, err := w.cumTokens(from)
		if err != nil {
			return err
		}
		cumK, err := w.cumTokens(k)
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

// newestFirst reads up to n of owner's messages in (lo, hi], newest first.
func (w *window) newestFirst(owner string, lo, hi int64, n int) ([]model.Message, error) {
	rows, err := w.stmt(w.st.page[pageDesc]).QueryContext(w.ctx, w.tenant, owner, lo, hi+1, n)
	if err != nil {
		return nil, err
	}
	return w.scan(rows, n)
}

// cumTokens is the session's running token total at seq (0 at 0).
func (w *window) cumTokens(seq int64) (int64, error) {
	if seq == 0 {
		return 0, nil
	}
	for _, g := range w.segs {
		if !g.contains(seq) {
			continue
		}
		var n int64
		err := w.stmt(w.st.cumTokens).QueryRowContext(w.ctx, w.tenant, g.owner, seq).Scan(counterInt{&n})
		if err == sql.ErrNoRows {
			return 0, model.Internal(errMissingSeq(g.owner, seq))
		}
		return n, err
	}
	return 0, model.Internal(errMissingSeq(w.tenant, seq))
}

// messages are the lineage's messages in (after, upto], in order.
func (w *window) messages(after, upto int64) ([]model.Message, error) {
	out := []model.Message{}
	for _, g := range w.segs {
		lo, hi := max(after, g.lo), min(upto, g.hi)
		if lo >= hi {
			continue
		}
		rows, err := w.stmt(w.st.page[pageAsc]).QueryContext(w.ctx, w.tenant, g.owner, lo, hi+1, hi-lo)
		if err != nil {
			return nil, err
		}
		ms, err := w.scan(rows, int(hi-lo))
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// systems are the lineage's system and developer messages up to seq, in order.
func (w *window) systems(upto int64) ([]model.Message, error) {
	var out []model.Message
	for _, g := range w.segs {
		hi := min(upto, g.hi)
		if g.lo >= hi {
			continue
		}
		rows, err := w.stmt(w.st.systems).QueryContext(w.ctx, w.tenant, g.owner, g.lo, hi)
		if err != nil {
			return nil, err
		}
		ms, err := w.scan(rows, 4)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}
