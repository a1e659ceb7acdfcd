package api_test

import (
	"net/http"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// TestKeyBoundToUser makes a key bound to one end user through the admin API
// and checks, on the backend LOGBOOK_TEST_BACKEND names, that it sees only that
// user's sessions and makes sessions of that user.
func TestKeyBoundToUser(t *testing.T) {
	root := newClient(t)
	admin := root.as(mustKey(t, root, "t1", model.ScopeAdmin).Key)
	var k model.NewAPIKey
	admin.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "name": "ann's", "user_id": "ann"}).want(t, http.StatusCreated, &k)
	if k.UserID == nil || *k.UserID != "ann" {
		t.Fatalf("created key user_id = %v", k.UserID)
	}
	var keys model.Page[model.APIKey]
	admin.do("GET", "/v1/admin/keys", nil).want(t, http.StatusOK, &keys)
	for _, l := range keys.Data {
		if l.ID == k.ID && (l.UserID == nil || *l.UserID != "ann") {
			t.Errorf("listed key user_id = %v", l.UserID)
		}
	}
	admin.do("POST", "/v1/admin/keys", map[string]any{"scope": "admin", "user_id": "ann"}).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")

	ann := root.as(k.Key)
	mustCreateSession(t, admin, map[string]any{"id": "bob-1", "user_id": "bob"})
	mustCreateSession(t, admin, map[string]any{"id": "nobody-1"})
	mustCreateSession(t, admin, map[string]any{"id": "ann-1", "user_id": "ann"})

	var made model.Session
	ann.do("POST", "/v1/sessions", map[string]any{"id": "ann-2"}).want(t, http.StatusCreated, &made)
	if made.UserID == nil || *made.UserID != "ann" {
		t.Errorf("session made by the bound key: user_id = %v", made.UserID)
	}
	ann.do("POST", "/v1/sessions", map[string]any{"id": "ann-3", "user_id": "ann"}).want(t, http.StatusCreated, nil)
	ann.do("POST", "/v1/sessions", map[string]any{"id": "x", "user_id": "bob"}).wantProblem(t, http.StatusForbidden, "forbidden")

	for _, id := range []string{"bob-1", "nobody-1", "missing"} {
		ann.do("GET", "/v1/sessions/"+id, nil).wantProblem(t, http.StatusNotFound, "not_found")
		ann.do("GET", "/v1/sessions/"+id+"/messages", nil).wantProblem(t, http.StatusNotFound, "not_found")
		ann.do("POST", "/v1/sessions/"+id+"/messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}}).
			wantProblem(t, http.StatusNotFound, "not_found")
		ann.do("PATCH", "/v1/sessions/"+id, map[string]any{"title": "mine"}).wantProblem(t, http.StatusNotFound, "not_found")
	}
	ann.do("GET", "/v1/sessions/ann-1", nil).want(t, http.StatusOK, nil)
	ann.do("POST", "/v1/sessions/ann-1/messages", map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}}).
		want(t, http.StatusCreated, nil)

	list := func(c *client, query string) []string {
		t.Helper()
		var page model.Page[model.Session]
		c.do("GET", "/v1/sessions"+query, nil).want(t, http.StatusOK, &page)
		var ids []string
		for _, s := range page.Data {
			ids = append(ids, s.ID)
		}
		return ids
	}
	for query, want := range map[string]int{"": 3, "?user_id=ann": 3, "?user_id=bob": 0} {
		if got := list(ann, query); len(got) != want {
			t.Errorf("bound key lists %q: %v, want %d sessions", query, got, want)
		} else {
			for _, id := range got {
				if id != "ann-1" && id != "ann-2" && id != "ann-3" {
					t.Errorf("bound key lists %q: %s", query, id)
				}
			}
		}
	}
	if got := list(admin, ""); len(got) != 5 {
		t.Errorf("unbound key lists %v, want 5 sessions", got)
	}
	for _, path := range []string{"/v1/messages/search?q=hi", "/v1/events", "/v1/usage"} {
		ann.do("GET", path, nil).wantProblem(t, http.StatusForbidden, "forbidden")
	}
}
