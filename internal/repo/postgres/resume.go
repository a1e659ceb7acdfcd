package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/history"
)

// resumeSnapshotPG runs fn in a read-only REPEATABLE READ transaction: under
// READ COMMITTED each statement would see its own snapshot, and a resume or a
// context window read across an append or a rewind could mix two histories.
func (s *Store) resumeSnapshotPG(ctx context.Context, fn func(pgx.Tx) error) error {
	return mapErr(pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn))
}

// Resume gathers what a new worker needs to continue a session
// (repo.Resume, as on SQLite), from one snapshot. Errors: KindNotFound.
func (s *Store) Resume(ctx context.Context, tenant, sessionID string) (model.Resume, error) {
	var r model.Resume
	err := s.resumeSnapshotPG(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = repo.Resume(ctx, &resumeReaderPG{tx: tx, tenant: tenant, id: sessionID}, sessionID)
		return err
	})
	return r, err
}

// resumeReaderPG is repo.ResumeReader over a snapshot.
type resumeReaderPG struct {
	tx         pgx.Tx
	tenant, id string
	segs       []lineageSegment // the lineage, walked once
}

func (r *resumeReaderPG) Session(ctx context.Context) (model.Session, error) {
	return getSessionTx(ctx, r.tx, r.tenant, r.id, "")
}

func (r *resumeReaderPG) LatestCheckpoint(ctx context.Context) (model.Checkpoint, error) {
	return getCheckpointPG(ctx, r.tx, r.tenant, r.id, 0)
}

func (r *resumeReaderPG) lineage(ctx context.Context) ([]lineageSegment, error) {
	if r.segs == nil {
		segs, err := lineagePG(ctx, r.tx, r.tenant, r.id)
		if err != nil {
			return nil, err
		}
		r.segs = segs
	}
	return r.segs, nil
}

func (r *resumeReaderPG) History(ctx context.Context, c *history.Checker) error {
	segs, err := r.lineage(ctx)
	if err != nil {
		return err
	}
	return feedHistoryPG(ctx, r.tx, r.tenant, segs, c)
}

func (r *resumeReaderPG) MessagesAfter(ctx context.Context, after int64, n int) ([]model.Message, error) {
	segs, err := r.lineage(ctx)
	if err != nil {
		return nil, err
	}
	return resumeMessagesAfterPG(ctx, r.tx, r.tenant, segs, after, n)
}

// resumeMessagesAfterPG reads up to n+1 messages after seq `after`, across a
// lineage: the one past n says there are more.
func resumeMessagesAfterPG(ctx context.Context, tx pgx.Tx, tenant string, segs []lineageSegment, after int64, n int) ([]model.Message, error) {
	out := []model.Message{}
	for _, g := range segs {
		if len(out) > n || g.hi <= after {
			continue
		}
		rows, err := tx.Query(ctx, `SELECT `+messageColumnsPG+` FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq LIMIT $5`,
			tenant, g.owner, max(after, g.lo), g.hi, n+1-len(out))
		if err != nil {
			return nil, mapErr(err)
		}
		ms, err := msgCollectPG(rows, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// resumeCheckHistoryPG runs the checks SQLite's resume runs too (package
// history) over the whole history.
func resumeCheckHistoryPG(ctx context.Context, tx pgx.Tx, tenant string, segs []lineageSegment, ses model.Session,
	pending []model.PendingToolCall) (history.Result, error) {
	c := history.NewChecker()
	if err := feedHistoryPG(ctx, tx, tenant, segs, c); err != nil {
		return history.Result{}, err
	}
	return c.Finish(ses, pending), nil
}

// feedHistoryPG feeds the whole history, in seq order, to c, reading only
// the columns its checks need.
func feedHistoryPG(ctx context.Context, tx pgx.Tx, tenant string, segs []lineageSegment, c *history.Checker) error {
	for _, g := range segs {
		rows, err := tx.Query(ctx, `SELECT seq, role, tool_calls::text, tool_call_id, tokens, cost FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq`, tenant, g.owner, g.lo, g.hi)
		if err != nil {
			return mapErr(err)
		}
		var (
			r         history.Row
			role      string
			toolCalls *string
		)
		for rows.Next() {
			r, toolCalls = history.Row{}, nil
			if err := rows.Scan(&r.Seq, &role, &toolCalls, &r.ToolCallID, &r.Tokens, &r.Cost); err != nil {
				rows.Close()
				return mapErr(err)
			}
			r.Role, r.Cost = model.Role(role), finiteCostPG(r.Cost)
			if toolCalls != nil {
				r.ToolCalls = []byte(*toolCalls)
			}
			c.Add(r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
	}
	return nil
}
