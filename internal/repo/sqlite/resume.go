package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/history"
)

// Resume gathers what a new worker needs to continue a session
// (repo.Resume), from one read transaction, so that the session, its
// checkpoint and its messages are one consistent snapshot. Errors:
// KindNotFound.
func (s *Store) Resume(ctx context.Context, tenant, sessionID string) (model.Resume, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Resume{}, mapErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	return repo.Resume(ctx, &resumeReader{tx: tx, tenant: tenant, id: sessionID}, sessionID)
}

// resumeReader is repo.ResumeReader over a read transaction.
type resumeReader struct {
	tx         *sql.Tx
	tenant, id string
	segs       []segment // the lineage, walked once
}

func (r *resumeReader) Session(ctx context.Context) (model.Session, error) {
	return getSession(ctx, r.tx, r.tenant, r.id)
}

func (r *resumeReader) LatestCheckpoint(ctx context.Context) (model.Checkpoint, error) {
	return getCheckpoint(ctx, r.tx, r.tenant, r.id, 0)
}

func (r *resumeReader) lineage(ctx context.Context) ([]segment, error) {
	if r.segs == nil {
		segs, err := lineage(ctx, r.tx, r.tenant, r.id)
		if err != nil {
			return nil, err
		}
		r.segs = segs
	}
	return r.segs, nil
}

func (r *resumeReader) History(ctx context.Context, c *history.Checker) error {
	segs, err := r.lineage(ctx)
	if err != nil {
		return err
	}
	return feedHistory(ctx, r.tx, r.tenant, segs, c)
}

func (r *resumeReader) MessagesAfter(ctx context.Context, after int64, n int) ([]model.Message, error) {
	segs, err := r.lineage(ctx)
	if err != nil {
		return nil, err
	}
	return listLineage(ctx, r.tx, r.tenant, segs, after, n)
}

// listLineage reads up to n+1 messages after seq `after`, across a lineage.
func listLineage(ctx context.Context, q querier, tenant string, segs []segment, after int64, n int) ([]model.Message, error) {
	out := []model.Message{}
	for _, g := range segs {
		if len(out) > n || g.hi <= after {
			continue
		}
		rows, err := q.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
			tenant, g.owner, max(after, g.lo), g.hi, n+1-len(out))
		if err != nil {
			return nil, mapErr(err)
		}
		ms, err := collect(rows, func(sc scanner) (model.Message, error) { return scanMessage(sc) })
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// checkHistory runs the shared checks (package history) over the whole
// history.
func checkHistory(ctx context.Context, q querier, tenant string, segs []segment, ses model.Session,
	pending []model.PendingToolCall) (history.Result, error) {
	c := history.NewChecker()
	if err := feedHistory(ctx, q, tenant, segs, c); err != nil {
		return history.Result{}, err
	}
	return c.Finish(ses, pending), nil
}

// feedHistory feeds the whole history, in seq order, to c, reading only the
// columns its checks need.
func feedHistory(ctx context.Context, q querier, tenant string, segs []segment, c *history.Checker) error {
	for _, g := range segs {
		rows, err := q.QueryContext(ctx, `SELECT seq, role, tool_calls, tool_call_id, tokens, cost FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq`, tenant, g.owner, g.lo, g.hi)
		if err != nil {
			return mapErr(err)
		}
		for rows.Next() {
			var (
				r          history.Row
				toolCalls  sql.NullString
				toolCallID sql.NullString
			)
			if err := rows.Scan(&r.Seq, &r.Role, &toolCalls, &toolCallID, counterInt{&r.Tokens}, counterFloat{&r.Cost}); err != nil {
				rows.Close()
				return mapErr(err)
			}
			if toolCalls.Valid {
				r.ToolCalls = []byte(toolCalls.String)
			}
			if toolCallID.Valid {
				r.ToolCallID = &toolCallID.String
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
