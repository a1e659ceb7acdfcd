package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const compactionColumns = `id, session_id, through_seq, summary, summary_parts, tokens, model, provider_item, created_at`

func scanCompaction(sc scanner) (model.Compaction, error) {
	var (
		c           model.Compaction
		summary     string
		parts, item sql.NullString
	)
	if err := sc.Scan(&c.ID, &c.SessionID, &c.ThroughSeq, &summary, &parts, counterInt{&c.Tokens}, &c.Model, &item, &c.CreatedAt); err != nil {
		return c, err
	}
	c.Summary = model.Content{Text: summary}
	if parts.Valid {
		if err := json.Unmarshal([]byte(parts.String), &c.Summary.Parts); err != nil {
			return c, err
		}
	}
	if item.Valid {
		c.ProviderItem = model.ProviderItem(item.String)
	}
	return c, nil
}

// CreateCompaction records that in.Summary stands for the session's messages
// 1..in.ThroughSeq, which must be past the latest compaction's and not past the
// session's last_seq. Errors: KindNotFound, session_closed, validation_failed.
//
// With in.Messages, they are appended after it in the same write, as a batch
// (an append's errors); in.ExpectedLastSeq fences both (stale_seq).
func (s *Store) CreateCompaction(ctx context.Context, tenant, sessionID string, in model.CreateCompaction) (model.CompactionResult, error) {
	c := model.Compaction{ID: newID(model.PrefixCompaction), SessionID: sessionID, ThroughSeq: in.ThroughSeq,
		Summary: in.Summary, Tokens: in.Tokens, Model: in.Model, ProviderItem: in.ProviderItem, CreatedAt: model.Now()}
	rows := make([]newRow, len(in.Messages))
	for i, m := range in.Messages {
		r, err := prepareRow(sessionID, c.CreatedAt, m)
		if err != nil {
			return model.CompactionResult{}, err
		}
		rows[i] = r
	}
	var appended []model.Message
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if len(rows) > 0 {
			defer s.sessions.forget(tenant, sessionID) // the savepoint may undo the append
		}
		if err := s.crashPoint(repo.PointCompaction); err != nil {
			return err
		}
		ses, err := getSession(ctx, tx, tenant, sessionID)
		if err != nil {
			return err
		}
		if ses.Status.Closed() {
			return &model.Error{Kind: model.KindConflict, Code: "session_closed",
				Msg: "session " + sessionID + " is " + string(ses.Status) + "; reopen it (PATCH status active) to compact"}
		}
		if e := in.ExpectedLastSeq; e != nil && *e != ses.LastSeq {
			return model.StaleSeq(*e, ses.LastSeq)
		}
		if in.ThroughSeq > ses.LastSeq {
			return model.Invalid(model.FieldError{Field: "through_seq", Message: "is past the session's last_seq " + itoa(ses.LastSeq)})
		}
		prev, err := latestCompaction(ctx, tx, tenant, sessionID)
		if err != nil {
			return err
		}
		n := int64(1)
		if prev != nil {
			if in.ThroughSeq <= prev.ThroughSeq {
				return model.Invalid(model.FieldError{Field: "through_seq",
					Message: "must be past the latest compaction's through_seq " + itoa(prev.ThroughSeq)})
			}
			if err := tx.QueryRowContext(ctx, `SELECT MAX(n) + 1 FROM compactions WHERE tenant_id = ? AND session_id = ?`,
				tenant, sessionID).Scan(&n); err != nil {
				return err
			}
		}
		if err := insertCompaction(ctx, tx, tenant, n, c); err != nil {
			return err
		}
		if err := s.recordEvent(ctx, tx, tenant, sessionID, model.EventCompactionCreated, repo.CompactionEventData(c)); err != nil {
			return err
		}
		if len(rows) > 0 {
			appended, err = s.appendInTx(ctx, tx, tenant, sessionID, rows, c.CreatedAt, in.BoundUser)
		}
		return err
	})
	return model.CompactionResult{Compaction: c, Messages: appended}, err
}

func insertCompaction(ctx context.Context, tx *sql.Tx, tenant string, n int64, c model.Compaction) error {
	summary := c.Summary.Text
	var parts *string
	if c.Summary.Parts != nil {
		b, err := json.Marshal(c.Summary.Parts)
		if err != nil {
			return model.Internal(err)
		}
		p := string(b)
		parts, summary = &p, model.SearchText(c.Summary.Parts)
	}
	var item *string
	if len(c.ProviderItem) > 0 {
		p := string(c.ProviderItem)
		item = &p
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO compactions (tenant_id, session_id, n, id, through_seq, summary, summary_parts,
		tokens, model, provider_item, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenant, c.SessionID, n, c.ID, c.ThroughSeq, summary, parts, c.Tokens, c.Model, item, int64(c.CreatedAt))
	return err
}

// latestCompaction is the session's newest compaction, or nil.
func latestCompaction(ctx context.Context, q querier, tenant, sessionID string) (*model.Compaction, error) {
	c, err := scanCompaction(q.QueryRowContext(ctx, `SELECT `+compactionColumns+` FROM compactions
		WHERE tenant_id = ? AND session_id = ? ORDER BY n DESC LIMIT 1`, tenant, sessionID))
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// ListCompactions returns a session's compactions, newest first.
func (s *Store) ListCompactions(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Compaction], error) {
	q := repo.Fingerprint("compactions", sessionID)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Compaction]{}, err
	}
	cond, args := "", []any{tenant, sessionID, tenant, sessionID, int64(model.Now())}
	if hasCur {
		cond, args = " AND through_seq < ?", append(args, cur.N)
	}
	limit := p.Clamp()
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+compactionColumns+` FROM compactions WHERE tenant_id = ? AND session_id = ? AND `+notExpired+
		cond+` ORDER BY n DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.Compaction]{}, mapErr(err)
	}
	out, err := collect(rows, scanCompaction)
	if err != nil {
		return model.Page[model.Compaction]{}, err
	}
	if len(out) == 0 {
		if _, err := getSession(ctx, s.rdb, tenant, sessionID); err != nil {
			return model.Page[model.Compaction]{}, err
		}
	}
	return repo.NewPage(out, limit, func(last model.Compaction) repo.Cursor { return repo.Cursor{Q: q, N: last.ThroughSeq} }), nil
}

// copyCompactions gives a fork the parent's compactions that lie within its
// prefix, so that its context reads as the parent's did at the fork point.
func copyCompactions(ctx context.Context, tx *sql.Tx, tenant, parent, fork string, at int64) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+compactionColumns+` FROM compactions
		WHERE tenant_id = ? AND session_id = ? AND through_seq <= ? ORDER BY n`, tenant, parent, at)
	if err != nil {
		return err
	}
	cs, err := collect(rows, scanCompaction)
	if err != nil {
		return err
	}
	for i, c := range cs {
		c.ID, c.SessionID = newID(model.PrefixCompaction), fork
		if err := insertCompaction(ctx, tx, tenant, int64(i+1), c); err != nil {
			return err
		}
	}
	return nil
}
