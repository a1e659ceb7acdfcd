package sqlite

import (
	"context"
	"database/sql"
	"strings"

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
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO api_keys (id, tenant_id, name, scope, key_hash, created_at, user_id) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			k.ID, tenant, k.Name, k.Scope, repo.HashKey(text), int64(k.CreatedAt), k.UserID)
		return err
	})
	if err != nil {
		return model.NewAPIKey{}, err
	}
	return k, nil
}

const keyColumns = `id, tenant_id, name, scope, created_at, revoked_at, user_id`

func scanKey(sc scanner) (model.APIKey, error) {
	var (
		k       model.APIKey
		revoked sql.NullInt64
	)
	if err := sc.Scan(&k.ID, &k.Tenant, &k.Name, &k.Scope, &k.CreatedAt, &revoked, &k.UserID); err != nil {
		return k, err
	}
	if revoked.Valid {
		t := model.Time(revoked.Int64)
		k.RevokedAt = &t
	}
	return k, nil
}

// ListAPIKeys lists a tenant's keys, newest first; tenant "" lists every tenant's
// (for the CLI, which has the database file and so everything already).
func (s *Store) ListAPIKeys(ctx context.Context, tenant string, p repo.PageRequest) (model.Page[model.APIKey], error) {
	q := repo.Fingerprint("keys", tenant)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.APIKey]{}, err
	}
	where, args := []string{"1 = 1"}, []any{}
	if tenant != "" {
		where, args = append(where, "tenant_id = ?"), append(args, tenant)
	}
	if hasCur {
		where, args = append(where, "(created_at, id) < (?, ?)"), append(args, cur.N, cur.S)
	}
	limit := p.Clamp()
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.APIKey]{}, mapErr(err)
	}
	defer rows.Close()
	var out []model.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return model.Page[model.APIKey]{}, mapErr(err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return model.Page[model.APIKey]{}, mapErr(err)
	}
	return repo.NewPage(out, limit, func(last model.APIKey) repo.Cursor { return repo.Cursor{Q: q, N: int64(last.CreatedAt), S: last.ID} }), nil
}

// RevokeAPIKey revokes a key of tenant (any tenant's when tenant is ""). Revoking
// a revoked key changes nothing. Errors: KindNotFound.
func (s *Store) RevokeAPIKey(ctx context.Context, tenant, id string) (model.APIKey, error) {
	var k model.APIKey
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ? AND (? = '' OR tenant_id = ?)`, id, tenant, tenant)
		var err error
		if k, err = scanKey(row); err == sql.ErrNoRows {
			return model.NotFound("key", id)
		} else if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return nil
		}
		now := model.Now()
		k.RevokedAt = &now
		_, err = tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ?`, int64(now), id)
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
		stored  []byte
		revoked sql.NullInt64
		user    sql.NullString
	)
	err := s.rdb.QueryRowContext(ctx, `SELECT tenant_id, scope, key_hash, revoked_at, user_id FROM api_keys WHERE id = ?`, id).
		Scan(&p.Tenant, &p.Scope, &stored, &revoked, &user)
	if err != nil && err != sql.ErrNoRows {
		return model.Principal{}, mapErr(err)
	}
	// stored stays nil for an unknown id, which KeyMatches refuses after the
	// same work as a wrong secret.
	if !repo.KeyMatches(text, stored) || revoked.Valid {
		return model.Principal{}, model.ErrUnauthorized
	}
	p.UserID = user.String
	return p, nil
}

// HasActiveKeys reports whether any unrevoked key exists: without one, a server
// on loopback runs in open mode.
func (s *Store) HasActiveKeys(ctx context.Context) (bool, error) {
	var n int
	err := s.rdb.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL)`).Scan(&n)
	return n == 1, mapErr(err)
}
