package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const compactionColumnsPG = `id, session_id, through_seq, summary, summary_parts, tokens, model, provider_item, created_at`

func scanCompactionPG(row pgx.Row) (model.Compaction, error) {
	var (
		c           model.Compaction
		summary     string
		parts, item *string
		created     int64
	)
	if err := row.Scan(&c.ID, &c.SessionID, &c.ThroughSeq, &summary, &parts, &c.Tokens, &c.Model, &item, &created); err != nil {
		return c, err
	}
	c.CreatedAt = model.Time(created)
	c.Summary = model.Content{Text: summary}
	if parts != nil {
		if err := json.Unmarshal([]byte(*parts), &c.Summary.Parts); err != nil {
			return c, err
		}
	}
	if item != nil {
		c.ProviderItem = model.ProviderItem(*item)
	}
	return c, nil
}

// CreateCompaction records that in.Summary stands for the session's messages
// 1..in.ThroughSeq, which must be past the latest compaction's and not past the
// session's last_seq. The session row is locked, so a compaction and an
// append or rewind of another process see one order. Errors: KindNotFound,
// session_closed, validation_failed. With in.Messages, they are appended
// after it in the same transaction, as a batch (an append's errors);
// in.ExpectedLastSeq fences both (stale_seq).
func (s *Store) CreateCompaction(ctx context.Context, tenant, sessionID string, in model.CreateCompaction) (model.CompactionResult, error) {
	c := model.Compaction{ID: newID(model.PrefixCompaction), SessionID: sessionID, ThroughSeq: in.ThroughSeq,
		Summary: in.Summary, Tokens: in.Tokens, Model: in.Model, ProviderItem: in.ProviderItem, CreatedAt: model.Now()}
	res := model.CompactionResult{Compaction: c}
	rows := make([]appendRowPG, len(in.Messages))
	for i, m := range in.Messages {
		r, err := prepareAppendRowPG(sessionID, c.CreatedAt, m)
		if err != nil {
			return res, err
		}
		rows[i] = r
	}
	summary := c.Summary.Text
	var parts, item *string
	if c.Summary.Parts != nil {
		b, err := json.Marshal(c.Summary.Parts)
		if err != nil {
			return res, model.Internal(err)
		}
		p := string(b)
		parts, summary = &p, model.SearchText(c.Summary.Parts)
	}
	if len(c.ProviderItem) > 0 {
		p := string(c.ProviderItem)
		item = &p
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointCompaction); err != nil {
			return err
		}
		var (
			status    model.Status
			lastSeq   int64
			expiresAt *int64
		)
		err := tx.QueryRow(ctx, `SELECT status, last_seq, expires_at FROM sessions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
			tenant, sessionID).Scan(&status, &lastSeq, &expiresAt)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && expiresAt != nil && *expiresAt <= int64(model.Now())) {
			return model.NotFound("session", sessionID)
		}
		if err != nil {
			return err
		}
		if status.Closed() {
			return &model.Error{Kind: model.KindConflict, Code: "session_closed",
				Msg: "session " + sessionID + " is " + string(status) + "; reopen it (PATCH status active) to compact"}
		}
		if e := in.ExpectedLastSeq; e != nil && *e != lastSeq {
			return model.StaleSeq(*e, lastSeq)
		}
		if in.ThroughSeq > lastSeq {
			return model.Invalid(model.FieldError{Field: "through_seq", Message: "is past the session's last_seq " + strconv.FormatInt(lastSeq, 10)})
		}
		var prevN, prevThrough int64
		err = tx.QueryRow(ctx, `SELECT n, through_seq FROM compactions WHERE tenant_id = $1 AND session_id = $2 ORDER BY n DESC LIMIT 1`,
			tenant, sessionID).Scan(&prevN, &prevThrough)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case in.ThroughSeq <= prevThrough:
			return model.Invalid(model.FieldError{Field: "through_seq",
				Message: "must be past the latest compaction's through_seq " + strconv.FormatInt(prevThrough, 10)})
		}
		_, err = tx.Exec(ctx, `INSERT INTO compactions (tenant_id, session_id, n, id, through_seq, summary, summary_parts,
			tokens, model, provider_item, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			tenant, sessionID, prevN+1, c.ID, c.ThroughSeq, summary, parts, c.Tokens, c.Model, item, int64(c.CreatedAt))
		if err != nil {
			return err
		}
		if err := recordEventPG(ctx, tx, tenant, sessionID, model.EventCompactionCreated, repo.CompactionEventData(c)); err != nil {
			return err
		}
		if len(rows) > 0 {
			res.Messages, err = s.rewindAppendTailPG(ctx, tx, tenant, sessionID, rows, c.CreatedAt, in.BoundUser)
		}
		return err
	})
	return res, err
}

// ListCompactions returns a session's compactions, newest first.
func (s *Store) ListCompactions(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Compaction], error) {
	q := repo.Fingerprint("compactions", sessionID)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Compaction]{}, err
	}
	limit := p.Clamp()
	after := int64(1) << 62
	if hasCur {
		after = cur.N
	}
	rows, err := s.pool.Query(ctx, `SELECT `+compactionColumnsPG+` FROM compactions
		WHERE tenant_id = $1 AND session_id = $2 AND through_seq < $3 AND `+notExpiredPG("$5")+` ORDER BY n DESC LIMIT $4`,
		tenant, sessionID, after, limit+1, int64(model.Now()))
	if err != nil {
		return model.Page[model.Compaction]{}, mapErr(err)
	}
	var out []model.Compaction
	for rows.Next() {
		c, err := scanCompactionPG(rows)
		if err != nil {
			rows.Close()
			return model.Page[model.Compaction]{}, mapErr(err)
		}
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return model.Page[model.Compaction]{}, mapErr(err)
	}
	if len(out) == 0 {
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > $3)`,
			tenant, sessionID, int64(model.Now())).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return model.Page[model.Compaction]{}, model.NotFound("session", sessionID)
		}
		if err != nil {
			return model.Page[model.Compaction]{}, mapErr(err)
		}
	}
	return repo.NewPage(out, limit, func(last model.Compaction) repo.Cursor { return repo.Cursor{Q: q, N: last.ThroughSeq} }), nil
}
