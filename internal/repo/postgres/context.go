package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
)

// Context is what the next LLM call needs, read from one snapshot, as
// SQLite's Context: the latest compaction, then the messages after it. With
// MaxTokens it keeps every system and developer message (first, those from
// before the window) and the newest messages that fit beside them and the
// summary, by their tokens; the window never starts with a tool result cut
// off from its call. Errors: KindNotFound.
func (s *Store) Context(ctx context.Context, tenant, id string, q model.ContextQuery) (model.Context, error) {
	var out model.Context
	err := s.resumeSnapshotPG(ctx, func(tx pgx.Tx) error {
		w := contextWindowPG{ctx: ctx, tx: tx, tenant: tenant, id: id}
		var err error
		out, err = w.read(q)
		return err
	})
	if err != nil {
		return model.Context{}, err
	}
	return out, nil
}

// contextWindowPG reads a lineage's messages within one snapshot.
type contextWindowPG struct {
	ctx        context.Context
	tx         pgx.Tx
	tenant, id string
	segs       []lineageSegment
}

func (w *contextWindowPG) read(q model.ContextQuery) (model.Context, error) {
	ses, c, hasCompaction, err := w.head()
	if err != nil {
		return model.Context{}, err
	}
	out := model.Context{SessionID: w.id, LastSeq: ses.LastSeq, MaxTokens: q.MaxTokens, Messages: []model.Message{}}
	if hasCompaction {
		out.Compaction = &c
	}
	from := int64(0) // the window starts after this seq
	if out.Compaction != nil {
		from = out.Compaction.ThroughSeq
		out.Tokens = out.Compaction.Tokens
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
			blocks, err := memAgentBlocks(w.ctx, w.tx, w.tenant, *ses.AgentID)
			if err != nil {
				return out, err
			}
			out.Blocks = append(out.Blocks, blocks...)
		}
	}
	return out, nil
}

// head reads the session, its latest compaction and its lineage in one round
// trip: a context read runs before every LLM call, and on PostgreSQL its cost
// is mostly round trips, not rows.
func (w *contextWindowPG) head() (ses model.Session, c model.Compaction, hasCompaction bool, err error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT `+sessionColumnsPG+` FROM sessions WHERE tenant_id = $1 AND id = $2`, w.tenant, w.id)
	b.Queue(`SELECT `+compactionColumnsPG+` FROM compactions
		WHERE tenant_id = $1 AND session_id = $2 ORDER BY n DESC LIMIT 1`, w.tenant, w.id)
	b.Queue(lineageQueryPG, w.tenant, w.id)
	br := w.tx.SendBatch(w.ctx, b)
	defer br.Close()
	ses, err = scanSessionPG(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && ses.Expired(model.Now())) { // expired: hidden, as getSessionTx has it
		return ses, c, false, model.NotFound("session", w.id)
	}
	if err != nil {
		return ses, c, false, err
	}
	c, err = scanCompactionPG(br.QueryRow())
	switch {
	case err == nil:
		hasCompaction = true
	case !errors.Is(err, pgx.ErrNoRows):
		return ses, c, false, err
	}
	if w.segs, err = lineagePG(w.ctx, contextBatchLineagePG{br}, w.tenant, w.id); err != nil {
		return ses, c, false, err
	}
	return ses, c, hasCompaction, br.Close()
}

// contextBatchLineagePG hands lineagePG the lineage query's rows from a batch
// already sent, so that its walk is the one every other read uses.
type contextBatchLineagePG struct{ br pgx.BatchResults }

func (q contextBatchLineagePG) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return q.br.Query()
}

// query reads messages of the session the window belongs to: inherited ones
// read as the fork's own, as on every other read.
func (w *contextWindowPG) query(n int, sql string, args ...any) ([]model.Message, error) {
	rows, err := w.tx.Query(w.ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	ms, err := msgCollectPG(rows, min(n, 1024)) // n may be a damaged session's claim
	for i := range ms {
		ms[i].SessionID = w.id
	}
	return ms, err
}

// fit fills out with what max tokens allow of the messages after from: it
// reads the history backwards from last, a chunk at a time, until the next
// message would not fit, so that it reads about as many rows as it returns.
func (w *contextWindowPG) fit(out *model.Context, from, last, budget, total int64) error {
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
				n = min(128, max(2*n, contextChunkGuessPG(room, total, last)))
				chunk, err := w.query(n, `SELECT `+messageColumnsPG+` FROM messages
					WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq DESC LIMIT $5`,
					w.tenant, g.owner, lo, hi, n)
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
		cumFrom, cumK, err := w.cumTokens(from, k)
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

// contextChunkGuessPG is SQLite's chunkGuess: how many of the newest messages
// room likely holds, from the session's average message, with a margin, so
// that most reads take one query that decodes a few rows more than they
// return. A wrong guess costs another chunk (twice as large), never a wrong
// answer.
func contextChunkGuessPG(room, total, last int64) int {
	avg := max(1, total/max(1, last))
	return int(min(room/avg+room/avg/4+8, 128))
}

// cumTokens is the session's running token total at seqs a and b (0 at 0),
// read in one round trip.
func (w *contextWindowPG) cumTokens(a, b int64) (int64, int64, error) {
	seqs := [2]int64{a, b}
	var out [2]int64
	batch := &pgx.Batch{}
	for i, seq := range seqs {
		if seq == 0 {
			continue
		}
		owner := ""
		for _, g := range w.segs {
			if seq > g.lo && seq <= g.hi {
				owner = g.owner
				break
			}
		}
		if owner == "" {
			return 0, 0, model.Internal(contextMissingSeqPG(w.tenant, seq))
		}
		batch.Queue(`SELECT cum_tokens FROM messages WHERE tenant_id = $1 AND session_id = $2 AND seq = $3`,
			w.tenant, owner, seq).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&out[i])
			if errors.Is(err, pgx.ErrNoRows) {
				return model.Internal(contextMissingSeqPG(owner, seq))
			}
			return err
		})
	}
	if batch.Len() > 0 {
		if err := w.tx.SendBatch(w.ctx, batch).Close(); err != nil {
			return 0, 0, err
		}
	}
	return out[0], out[1], nil
}

func contextMissingSeqPG(session string, seq int64) error {
	return fmt.Errorf("session %s: no message at seq %d of its lineage", session, seq)
}

// messages are the lineage's messages in (after, upto], in order.
func (w *contextWindowPG) messages(after, upto int64) ([]model.Message, error) {
	out := []model.Message{}
	for _, g := range w.segs {
		lo, hi := max(after, g.lo), min(upto, g.hi)
		if lo >= hi {
			continue
		}
		ms, err := w.query(int(hi-lo), `SELECT `+messageColumnsPG+` FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq`, w.tenant, g.owner, lo, hi)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// systems are the lineage's system and developer messages up to seq, in order.
func (w *contextWindowPG) systems(upto int64) ([]model.Message, error) {
	var out []model.Message
	for _, g := range w.segs {
		hi := min(upto, g.hi)
		if g.lo >= hi {
			continue
		}
		ms, err := w.query(4, `SELECT `+messageColumnsPG+` FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND role IN ('system', 'developer') AND seq > $3 AND seq <= $4 ORDER BY seq`,
			w.tenant, g.owner, g.lo, hi)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}
