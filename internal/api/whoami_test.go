package api_test

import (
	"net/http"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// TestWhoAmI: each key learns its own tenant, scope, id and user, and open
// mode says so; a bad key learns nothing.
func TestWhoAmI(t *testing.T) {
	var open model.Identity
	newClient(t).do("GET", "/v1/whoami", nil).want(t, http.StatusOK, &open)
	if open.Tenant != model.DefaultTenant || open.Scope != model.ScopeAdmin || !open.OpenMode || open.KeyID != nil || open.UserID != nil {
		t.Errorf("open mode: got %+v", open)
	}

	c := newClient(t, withoutOpenMode())
	read := mustKey(t, c, "tenant-a", model.ScopeRead)
	write := mustKey(t, c, "tenant-b", model.ScopeWrite)
	user := "u-42"
	bound, err := c.store.CreateAPIKey(t.Context(), "tenant-a", model.CreateAPIKey{Scope: model.ScopeWrite, UserID: &user})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		key  model.NewAPIKey
		want model.Identity
	}{
		{"read_key", read, model.Identity{Tenant: "tenant-a", Scope: model.ScopeRead, KeyID: &read.ID}},
		{"write_key_of_another_tenant", write, model.Identity{Tenant: "tenant-b", Scope: model.ScopeWrite, KeyID: &write.ID}},
		{"key_bound_to_a_user", bound, model.Identity{Tenant: "tenant-a", Scope: model.ScopeWrite, KeyID: &bound.ID, UserID: &user}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got model.Identity
			c.as(tc.key.Key).do("GET", "/v1/whoami", nil).want(t, http.StatusOK, &got)
			if got.Tenant != tc.want.Tenant || got.Scope != tc.want.Scope || got.OpenMode ||
				str(got.KeyID) != str(tc.want.KeyID) || str(got.UserID) != str(tc.want.UserID) {
				t.Errorf("got %+v (key %s, user %s), want %+v", got, str(got.KeyID), str(got.UserID), tc.want)
			}
		})
	}
	t.Run("no_key", func(t *testing.T) {
		c.do("GET", "/v1/whoami", nil).wantProblem(t, http.StatusUnauthorized, "unauthorized")
	})
	t.Run("revoked_key", func(t *testing.T) {
		if _, err := c.store.RevokeAPIKey(t.Context(), "tenant-a", read.ID); err != nil {
			t.Fatal(err)
		}
		c.as(read.Key).do("GET", "/v1/whoami", nil).wantProblem(t, http.StatusUnauthorized, "unauthorized")
	})
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
