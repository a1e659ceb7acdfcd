package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// IdempotentRequest: see repo.Idempotency.
func (s *Store) IdempotentRequest(ctx context.Context, k model.IdempotencyKey, since model.Time) (model.IdempotentRecord, bool, error) {
	var (
		rec     model.IdempotentRecord
		status  sql.NullInt64
		headers *string
		body    []byte
	)
	err := s.rdb.QueryRowContext(ctx, `SELECT fingerprint, route, created_at, status, headers, body FROM idempotency_keys
		WHERE tenant_id = ? AND user_id = ? AND key = ? AND created_at >= ?`, k.Tenant, k.User, k.Key, int64(since)).
		Scan(&rec.Fingerprint, &rec.Route, &rec.CreatedAt, &status, &headers, &body)
	switch {
	case err == sql.ErrNoRows:
		return rec, false, nil
	case err != nil:
		return rec, false, mapErr(err)
	}
	if status.Valid {
		h, err := repo.DecodeAnswerHeaders(headers)
		if err != nil {
			return rec, false, model.Internal(err)
		}
		rec.Answer = &model.IdempotentAnswer{Status: int(status.Int64), Headers: h, Body: body}
	}
	return rec, true, nil
}

// SaveIdempotentAnswer: see repo.Idempotency.
func (s *Store) SaveIdempotentAnswer(ctx context.Context, k model.IdempotencyKey, fingerprint []byte, a model.IdempotentAnswer) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET status = ?, headers = ?, body = ?
			WHERE tenant_id = ? AND user_id = ? AND key = ? AND fingerprint = ? AND status IS NULL`,
			a.Status, repo.EncodeAnswerHeaders(a.Headers), a.Body, k.Tenant, k.User, k.Key, fingerprint)
		return err
	})
}

// expireKeysBatch bounds the keys one writer transaction deletes, so that
// appends queued behind a large sweep wait for one batch at most.
const expireKeysBatch = 1000

// ExpireIdempotencyKeys: see repo.Idempotency.
func (s *Store) ExpireIdempotencyKeys(ctx context.Context, cutoff model.Time) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN
				(SELECT rowid FROM idempotency_keys WHERE created_at < ? LIMIT ?)`, int64(cutoff), expireKeysBatch)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		total += n
		if err != nil || n < expireKeysBatch {
			return total, err
		}
	}
}

// claimIdempotencyKey inserts c's record in the write that holds it, or
// refuses when another request's record, not yet expired, holds the key.
func claimIdempotencyKey(ctx context.Context, tx *sql.Tx, c *repo.IdempotencyClaim, fingerprint []byte) error {
	res, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (tenant_id, user_id, key, fingerprint, route, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, user_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, route = excluded.route,
			created_at = excluded.created_at, status = NULL, headers = NULL, body = NULL
		WHERE idempotency_keys.created_at < ?`,
		c.Key.Tenant, c.Key.User, c.Key.Key, fingerprint, c.Route, int64(model.Now()), int64(c.Since))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	return repo.ClaimTaken(c)
}
