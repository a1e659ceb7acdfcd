package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// IdempotentRequest: see repo.Idempotency.
func (s *Store) IdempotentRequest(ctx context.Context, k model.IdempotencyKey, since model.Time) (model.IdempotentRecord, bool, error) {
	var (
		rec     model.IdempotentRecord
		status  *int32
		headers *string
		body    []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT fingerprint, route, created_at, status, headers, body FROM idempotency_keys
		WHERE tenant_id = $1 AND user_id = $2 AND key = $3 AND created_at >= $4`, k.Tenant, k.User, k.Key, int64(since)).
		Scan(&rec.Fingerprint, &rec.Route, &rec.CreatedAt, &status, &headers, &body)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return rec, false, nil
	case err != nil:
		return rec, false, mapErr(err)
	}
	if status != nil {
		h, err := repo.DecodeAnswerHeaders(headers)
		if err != nil {
			return rec, false, model.Internal(err)
		}
		rec.Answer = &model.IdempotentAnswer{Status: int(*status), Headers: h, Body: body}
	}
	return rec, true, nil
}

// SaveIdempotentAnswer: see repo.Idempotency.
func (s *Store) SaveIdempotentAnswer(ctx context.Context, k model.IdempotencyKey, fingerprint []byte, a model.IdempotentAnswer) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET status = $1, headers = $2, body = $3
		WHERE tenant_id = $4 AND user_id = $5 AND key = $6 AND fingerprint = $7 AND status IS NULL`,
		a.Status, repo.EncodeAnswerHeaders(a.Headers), a.Body, k.Tenant, k.User, k.Key, fingerprint)
	return mapErr(err)
}

// expireKeysBatchPG bounds the keys one statement deletes.
const expireKeysBatchPG = 1000

// ExpireIdempotencyKeys: see repo.Idempotency.
func (s *Store) ExpireIdempotencyKeys(ctx context.Context, cutoff model.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT $2))`, int64(cutoff), expireKeysBatchPG)
		if err != nil {
			return total, mapErr(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < expireKeysBatchPG {
			return total, nil
		}
	}
}

// claimIdempotencyKeyPG inserts c's record in the transaction of the write
// that holds it, or refuses when another request's record, not yet expired,
// holds the key. A concurrent claim of the same key waits here for the
// other transaction to end.
func claimIdempotencyKeyPG(ctx context.Context, tx pgx.Tx, c *repo.IdempotencyClaim, fingerprint []byte) error {
	tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (tenant_id, user_id, key, fingerprint, route, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id, user_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, route = excluded.route,
			created_at = excluded.created_at, status = NULL, headers = NULL, body = NULL
		WHERE idempotency_keys.created_at < $7`,
		c.Key.Tenant, c.Key.User, c.Key.Key, fingerprint, c.Route, int64(model.Now()), int64(c.Since))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return repo.ClaimTaken(c)
}
