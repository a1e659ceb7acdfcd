package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// keysFilesOpen opens a store on a fresh database and returns the database's
// URL too, for a raw connection or a second store.
func keysFilesOpen(t *testing.T, faults *repo.Faults) (*postgres.Store, string) {
	t.Helper()
	url := mustDatabase(t)
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, url
}

// keysFilesRaw connects to the database behind the store, to look at and
// damage rows as another program would.
func keysFilesRaw(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func keysFilesCount(t *testing.T, conn *pgx.Conn, query string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// keysFilesSameError compares what a client sees of two errors: kind, code,
// message and fields.
func keysFilesSameError(t *testing.T, got error, want *model.Error) {
	t.Helper()
	var me *model.Error
	if !errors.As(got, &me) {
		t.Fatalf("error %v, want %v", got, want)
	}
	if me.Kind != want.Kind || me.Code != want.Code || me.Msg != want.Msg || !slices.Equal(me.Fields, want.Fields) {
		t.Fatalf("error %+v, want %+v", me, want)
	}
}

func keysMust(t *testing.T, st *postgres.Store, tenant string, scope model.Scope, name string) model.NewAPIKey {
	t.Helper()
	k, err := st.CreateAPIKey(t.Context(), tenant, model.CreateAPIKey{Scope: scope, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeysAuthenticatePG(t *testing.T) {
	st := mustOpen(t)
	ctx := t.Context()
	if has, err := st.HasActiveKeys(ctx); err != nil || has {
		t.Fatalf("HasActiveKeys on an empty store: %v, %v", has, err)
	}
	good := keysMust(t, st, "acme", model.ScopeWrite, "runtime")
	revoked := keysMust(t, st, "acme", model.ScopeAdmin, "")
	if _, err := st.RevokeAPIKey(ctx, "acme", revoked.ID); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(good.Key, "lb_") || len(good.Key) != 3+16+1+64 || good.ID != "key_"+good.Key[3:19] ||
		good.Tenant != "acme" || good.Name != "runtime" || good.Scope != model.ScopeWrite || good.CreatedAt == 0 || good.RevokedAt != nil {
		t.Fatalf("new key %+v", good)
	}
	wrongSecret := good.Key[:len(good.Key)-4] + "0000"
	if wrongSecret == good.Key {
		wrongSecret = good.Key[:len(good.Key)-4] + "1111"
	}
	cases := []struct {
		name, text string
		want       model.Principal
	}{
		{"good", good.Key, model.Principal{Tenant: "acme", Scope: model.ScopeWrite, KeyID: good.ID}},
		{"revoked", revoked.Key, model.Principal{}},
		{"wrong_secret", wrongSecret, model.Principal{}},
		{"unknown_id", "lb_0123456789abcdef_" + strings.Repeat("a", 64), model.Principal{}},
		{"empty", "", model.Principal{}},
		{"malformed", "nope", model.Principal{}},
		{"no_separator", strings.Replace(good.Key, "_", "x", 2), model.Principal{}},
		{"too_long", good.Key + "0", model.Principal{}},
		{"bearer", "Bearer " + good.Key, model.Principal{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := st.Authenticate(ctx, c.text)
			if c.want == (model.Principal{}) {
				if err != model.ErrUnauthorized || p != c.want {
					t.Fatalf("Authenticate: %+v, %v; want the one unauthorized error", p, err)
				}
				return
			}
			if err != nil || p != c.want {
				t.Fatalf("Authenticate: %+v, %v; want %+v", p, err, c.want)
			}
		})
	}
	if has, err := st.HasActiveKeys(ctx); err != nil || !has {
		t.Fatalf("HasActiveKeys with one active key: %v, %v", has, err)
	}
	if _, err := st.RevokeAPIKey(ctx, "", good.ID); err != nil {
		t.Fatal(err)
	}
	if has, err := st.HasActiveKeys(ctx); err != nil || has {
		t.Fatalf("HasActiveKeys with every key revoked: %v, %v", has, err)
	}
}

// A key's text is the same format on both backends: its hash is what the row
// holds, so a key row copied from SQLite authenticates here.
func TestKeysHashIsSharedPG(t *testing.T) {
	st, url := keysFilesOpen(t, nil)
	id, text, err := repo.NewKeyText()
	if err != nil {
		t.Fatal(err)
	}
	conn := keysFilesRaw(t, url)
	if _, err := conn.Exec(t.Context(), `INSERT INTO api_keys (id, tenant_id, name, scope, key_hash, created_at)
		VALUES ($1, 'moved', 'from sqlite', 'read', $2, 1)`, id, repo.HashKey(text)); err != nil {
		t.Fatal(err)
	}
	p, err := st.Authenticate(t.Context(), text)
	if want := (model.Principal{Tenant: "moved", Scope: model.ScopeRead, KeyID: id}); err != nil || p != want {
		t.Fatalf("Authenticate: %+v, %v; want %+v", p, err, want)
	}
}

func TestKeysListPG(t *testing.T) {
	st := mustOpen(t)
	ctx := t.Context()
	var all []model.APIKey
	for i, tenant := range []string{"a", "b", "a", "a", "b", "a", "a"} {
		k := keysMust(t, st, tenant, model.ScopeRead, string(rune('p'+i)))
		all = append(all, k.APIKey)
	}
	if _, err := st.RevokeAPIKey(ctx, "a", all[2].ID); err != nil {
		t.Fatal(err)
	}
	newestFirst := func(tenant string) []model.APIKey {
		var out []model.APIKey
		for _, k := range all {
			if tenant == "" || k.Tenant == tenant {
				out = append(out, k)
			}
		}
		slices.SortFunc(out, func(x, y model.APIKey) int {
			if x.CreatedAt != y.CreatedAt {
				return int(y.CreatedAt - x.CreatedAt)
			}
			return strings.Compare(y.ID, x.ID)
		})
		return out
	}
	cases := []struct {
		name, tenant string
		limit        int
	}{
		{"one_tenant_one_page", "a", 0},
		{"one_tenant_by_two", "a", 2},
		{"every_tenant_by_three", "", 3},
		{"every_tenant_by_one", "", 1},
		{"other_tenant", "b", 1},
		{"no_keys", "nobody", 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []model.APIKey
			cursor := ""
			for pages := 0; ; pages++ {
				page, err := st.ListAPIKeys(ctx, c.tenant, repo.PageRequest{Limit: c.limit, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if page.Data == nil || len(page.Data) > max(c.limit, 1) && c.limit > 0 || pages > 10 {
					t.Fatalf("page %+v", page)
				}
				got = append(got, page.Data...)
				if !page.HasMore {
					if page.NextCursor != nil {
						t.Fatal("a cursor on the last page")
					}
					break
				}
				cursor = *page.NextCursor
			}
			want := newestFirst(c.tenant)
			for i := range want {
				if want[i].ID == all[2].ID {
					if i >= len(got) || got[i].RevokedAt == nil {
						t.Fatalf("the revoked key is listed without revoked_at: %+v", got)
					}
					want[i].RevokedAt = got[i].RevokedAt
				}
			}
			if !slices.EqualFunc(got, want, keysSame) {
				t.Fatalf("listed\n%+v\nwant\n%+v", got, want)
			}
		})
	}

	page, err := st.ListAPIKeys(ctx, "a", repo.PageRequest{Limit: 1})
	if err != nil || page.NextCursor == nil {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	_, err = st.ListAPIKeys(ctx, "b", repo.PageRequest{Limit: 1, Cursor: *page.NextCursor})
	keysFilesSameError(t, err, &model.Error{Kind: model.KindBadRequest, Code: "invalid_cursor",
		Msg:    "Cursor is not valid for this list; start again without a cursor",
		Fields: []model.FieldError{{Field: "cursor", Message: "not a Cursor of this list and filter"}}})
}

func keysSame(x, y model.APIKey) bool {
	return x.ID == y.ID && x.Tenant == y.Tenant && x.Name == y.Name && x.Scope == y.Scope && x.CreatedAt == y.CreatedAt &&
		(x.RevokedAt == nil) == (y.RevokedAt == nil) && (x.RevokedAt == nil || *x.RevokedAt == *y.RevokedAt)
}

func TestKeysRevokePG(t *testing.T) {
	st := mustOpen(t)
	ctx := t.Context()
	k := keysMust(t, st, "acme", model.ScopeAdmin, "ops")
	other := keysMust(t, st, "other", model.ScopeRead, "")
	cases := []struct {
		name, tenant, id string
		wantErr          *model.Error
	}{
		{"unknown", "acme", "key_0000000000000000", model.NotFound("key", "key_0000000000000000")},
		{"another_tenants", "acme", other.ID, model.NotFound("key", other.ID)},
		{"own", "acme", k.ID, nil},
		{"again", "acme", k.ID, nil},
		{"any_tenant", "", other.ID, nil},
		{"any_tenant_unknown", "", "key_x", model.NotFound("key", "key_x")},
	}
	revokedAt := map[string]model.Time{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := st.RevokeAPIKey(ctx, c.tenant, c.id)
			if c.wantErr != nil {
				keysFilesSameError(t, err, c.wantErr)
				return
			}
			if err != nil || got.ID != c.id || got.RevokedAt == nil {
				t.Fatalf("RevokeAPIKey: %+v, %v", got, err)
			}
			// Revoking a revoked key changes nothing.
			if first, ok := revokedAt[c.id]; ok && first != *got.RevokedAt {
				t.Fatalf("revoked again at %v, first at %v", *got.RevokedAt, first)
			}
			revokedAt[c.id] = *got.RevokedAt
		})
	}
	if _, err := st.Authenticate(ctx, k.Key); err != model.ErrUnauthorized {
		t.Fatalf("a revoked key authenticates: %v", err)
	}
}
