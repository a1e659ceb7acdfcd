package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
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
	// The walk runs in this snapshot rather than from the lineage cache: the
	// cache may already know a purge or fork this snapshot does not.
	rows, err := w.stmt(w.st.lineage).QueryContext(w.ctx, w.tenant, w.id)
	if err != nil {
		return out, err
	}
	if w.segs, _, _, err = segmentsOf(rows, w.id); err != nil {
		return out, err
	}
	if err := repo.FillContext(w, repoSegments(w.segs), &out, ses, q); err != nil {
		return out, err
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

// NewestFirst reads up to n of owner's messages in (lo, hi], newest first.
func (w *window) NewestFirst(owner string, lo, hi int64, n int) ([]model.Message, error) {
	rows, err := w.stmt(w.st.page[pageDesc]).QueryContext(w.ctx, w.tenant, owner, lo, hi+1, n)
	if err != nil {
		return nil, err
	}
	return w.scan(rows, n)
}

// CumTokens are the session's running token totals at seqs a and b.
func (w *window) CumTokens(a, b int64) (int64, int64, error) {
	x, err := w.cumTokens(a)
	if err != nil {
		return 0, 0, err
	}
	y, err := w.cumTokens(b)
	return x, y, err
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

// Messages are the lineage's messages in (after, upto], in order.
func (w *window) Messages(after, upto int64) ([]model.Message, error) {
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

// Systems are the lineage's system and developer messages up to seq, in order.
func (w *window) Systems(upto int64) ([]model.Message, error) {
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

// repoSegments are segs as the shared code takes them.
func repoSegments(segs []segment) []repo.Segment {
	out := make([]repo.Segment, len(segs))
	for i, g := range segs {
		out[i] = repo.Segment{Owner: g.owner, Lo: g.lo, Hi: g.hi}
	}
	return out
}
