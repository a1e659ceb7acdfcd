package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
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
	if err := repo.FillContext(w, repoSegmentsPG(w.segs), &out, ses, q); err != nil {
		return out, err
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

// NewestFirst reads up to n of owner's messages in (lo, hi], newest first.
func (w *contextWindowPG) NewestFirst(owner string, lo, hi int64, n int) ([]model.Message, error) {
	return w.query(n, `SELECT `+messageColumnsPG+` FROM messages
		WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq DESC LIMIT $5`,
		w.tenant, owner, lo, hi, n)
}

// CumTokens are the session's running token totals at seqs a and b (0 at 0),
// read in one round trip.
func (w *contextWindowPG) CumTokens(a, b int64) (int64, int64, error) {
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

// Messages are the lineage's messages in (after, upto], in order.
func (w *contextWindowPG) Messages(after, upto int64) ([]model.Message, error) {
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

// Systems are the lineage's system and developer messages up to seq, in order.
func (w *contextWindowPG) Systems(upto int64) ([]model.Message, error) {
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

// repoSegmentsPG are segs as the shared code takes them.
func repoSegmentsPG(segs []lineageSegment) []repo.Segment {
	out := make([]repo.Segment, len(segs))
	for i, g := range segs {
		out[i] = repo.Segment{Owner: g.owner, Lo: g.lo, Hi: g.hi}
	}
	return out
}
