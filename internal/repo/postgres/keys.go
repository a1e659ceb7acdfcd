package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// CreateAPIKey makes a key for tenant. The key text is in the result and nowhere
// else: only its hash is stored.
func (s *Store) CreateAPIKey(ctx context.Context, tenant string, in model.CreateAPIKey) (model.NewAPIKey, error) {
	id, text, err := repo.NewKeyText()
	if err != nil {
		return model.NewAPIKey{}, model.Internal(err)
	}
	k := model.NewAPIKey{
		APIKey: model.APIKey{ID: id, Tenant: tenant, Name: in.Name, Scope: in.Scope, CreatedAt: model.Now(), UserID: in.UserID},
		Key:    text,
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, tenant_id, name, scope, key_hash, created_at, user_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			k.ID, tenant, k.Name, string(k.Scope), repo.HashKey(text), int64(k.CreatedAt), k.UserID)
		return err
	})
	if err != nil {
		return model.NewAPIKey{}, err
	}
	return k, nil
}

const keyColumnsPG = `id, tenant_id, name, scope, created_at, revoked_at, user_id`

func scanKeyPG(row pgx.Row) (model.APIKey, error) {
	var (
		k       model.APIKey
		scope   string
		created int64
		revoked *int64
	)
	if err := row.Scan(&k.ID, &k.Tenant, &k.Name, &scope, &created, &revoked, &k.UserID); err != nil {
		return k, err
	}
	k.Scope, k.CreatedAt = model.Scope(scope), model.Time(created)
	if revoked != nil {
		t := model.Time(*revoked)
		k.RevokedAt = &t
	}
	return k, nil
}

// ListAPIKeys lists a tenant's keys, newest first; tenant "" lists every tenant's.
// Ids are "key_" and lowercase hex, so any collation orders them as SQLite's
// BINARY does.
func (s *Store) ListAPIKeys(ctx context.Context, tenant string, p repo.PageRequest) (model.Page[model.APIKey], error) {
	q := repo.Fingerprint("keys", tenant)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.APIKey]{}, err
	}
	where, args := []string{"TRUE"}, []any{}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if tenant != "" {
		where = append(where, "tenant_id = "+arg(tenant))
	}
	if hasCur {
		where = append(where, "(created_at, id) < ("+arg(cur.N)+", "+arg(cur.S)+")")
	}
	limit := p.Clamp()
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumnsPG+` FROM api_keys WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT `+arg(limit+1), args...)
	if err != nil {
		return model.Page[model.APIKey]{}, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.APIKey, error) { return scanKeyPG(r) })
	if err != nil {
		return model.Page[model.APIKey]{}, mapErr(err)
	}
	return repo.NewPage(out, limit, func(last model.APIKey) repo.Cursor { return repo.Cursor{Q: q, N: int64(last.CreatedAt), S: last.ID} }), nil
}

// RevokeAPIKey revokes a key of tenant (any tenant's when tenant is ""). Revoking
// a revoked key changes nothing. Errors: KindNotFound.
//
// One statement: a concurrent revoke of the same key waits for the row lock,
// then sees the first one's revoked_at and keeps it, as SQLite's serialised
// writes do.
func (s *Store) RevokeAPIKey(ctx context.Context, tenant, id string) (model.APIKey, error) {
	var k model.APIKey
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		k, err = scanKeyPG(tx.QueryRow(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3)
			WHERE id = $1 AND ($2 = '' OR tenant_id = $2) RETURNING `+keyColumnsPG, id, tenant, int64(model.Now())))
		if errors.Is(err, pgx.ErrNoRows) {
			return model.NotFound("key", id)
		}
		return err
	})
	if err != nil {
		return model.APIKey{}, err
	}
	return k, nil
}

// Authenticate returns who a key acts as. A malformed, unknown or revoked key is
// model.ErrUnauthorized, the same error for each, so answers reveal nothing.
func (s *Store) Authenticate(ctx context.Context, text string) (model.Principal, error) {
	id, ok := repo.KeyIDOf(text)
	if !ok {
		return model.Principal{}, model.ErrUnauthorized
	}
	var (
		p       = model.Principal{KeyID: id}
		scope   string
		stored  []byte
		revoked *int64
		user    *string
	)
	err := s.pool.QueryRow(ctx, `SELECT tenant_id, scope, key_hash, revoked_at, user_id FROM api_keys WHERE id = $1`, id).
		Scan(&p.Tenant, &scope, &stored, &revoked, &user)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return model.Principal{}, mapErr(err)
	}
	// stored stays nil for an unknown id, which KeyMatches refuses after the
	// same work as a wrong secret.
	if !repo.KeyMatches(text, stored) || revoked != nil {
		return model.Principal{}, model.ErrUnauthorized
	}
	p.Scope = model.Scope(scope)
	if user != nil {
		p.UserID = *user
	}
	return p, nil
}

// HasActiveKeys reports whether any unrevoked key exists: without one, a server
// on loopback runs in open mode.
func (s *Store) HasActiveKeys(ctx context.Context) (bool, error) {
	var active bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL)`).Scan(&active)
	return active, mapErr(err)
}
