package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func TestSessionUserID(t *testing.T) {
	c := newClient(t)
	a1 := mustCreateSession(t, c, map[string]any{"id": "u-a1", "user_id": "user-a"})
	mustCreateSession(t, c, map[string]any{"id": "u-b1", "user_id": "user-b"})
	a2 := mustCreateSession(t, c, map[string]any{"id": "u-a2", "user_id": "user-a", "agent_id": "agt_u"})
	none := mustCreateSession(t, c, map[string]any{"id": "u-none"})

	t.Run("returned", func(t *testing.T) {
		if a1.UserID == nil || *a1.UserID != "user-a" {
			t.Errorf("create: user_id = %v", a1.UserID)
		}
		if got := mustGetSession(t, c, a1.ID); got.UserID == nil || *got.UserID != "user-a" {
			t.Errorf("get: user_id = %v", got.UserID)
		}
		if none.UserID != nil {
			t.Errorf("no user: user_id = %v", *none.UserID)
		}
		res := c.do("GET", "/v1/sessions/"+none.ID, nil).want(t, http.StatusOK, nil)
		if !bytes.Contains(res.Body, []byte(`"user_id":null`)) {
			t.Errorf("user_id not present as null: %s", res.Body)
		}
	})

	t.Run("list_filter", func(t *testing.T) {
		for _, tc := range []struct{ query, want string }{
			{"user_id=user-a", "u-a2 u-a1"},
			{"user_id=user-b", "u-b1"},
			{"user_id=user-a&agent_id=agt_u", "u-a2"},
			{"user_id=nobody", ""},
		} {
			for _, limit := range []int{1, 50} {
				var ids []string
				for _, s := range listAll[model.Session](t, c, "/v1/sessions?"+tc.query, limit) {
					ids = append(ids, s.ID)
				}
				if got := strings.Join(ids, " "); got != tc.want {
					t.Errorf("%s limit %d: got %q, want %q", tc.query, limit, got, tc.want)
				}
			}
		}
	})

	t.Run("cursor_is_bound_to_user", func(t *testing.T) {
		var p model.Page[model.Session]
		c.do("GET", "/v1/sessions?user_id=user-a&limit=1", nil).want(t, http.StatusOK, &p)
		c.do("GET", "/v1/sessions?user_id=user-b&limit=1&cursor="+*p.NextCursor, nil).
			wantProblem(t, http.StatusBadRequest, "invalid_cursor")
	})

	t.Run("fork_inherits", func(t *testing.T) {
		var f model.Session
		c.do("POST", "/v1/sessions/"+a2.ID+"/fork", map[string]any{"id": "u-a2-fork"}).want(t, http.StatusCreated, &f)
		if f.UserID == nil || *f.UserID != "user-a" {
			t.Errorf("fork user_id = %v", f.UserID)
		}
	})

	t.Run("bad_input", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			body map[string]any
		}{
			{"empty", map[string]any{"user_id": ""}},
			{"too_long", map[string]any{"user_id": strings.Repeat("u", 129)}},
			{"not_string", map[string]any{"user_id": 7}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := c.do("POST", "/v1/sessions", tc.body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
				if len(p.Errors) != 1 || p.Errors[0].Field != "user_id" {
					t.Errorf("errors = %+v, want one naming user_id", p.Errors)
				}
			})
		}
	})

	t.Run("export_import", func(t *testing.T) {
		exp := mustExport(t, c, a1.ID)
		if !bytes.Contains(exp, []byte(`"user_id":"user-a"`)) {
			t.Errorf("export lacks user_id: %.300s", exp)
		}
		got := mustImport(t, newClient(t), exp, "")
		if got.UserID == nil || *got.UserID != "user-a" {
			t.Errorf("imported user_id = %v", got.UserID)
		}
		// an unset user_id is left out, so that versions before it still import the export
		if exp := mustExport(t, c, none.ID); bytes.Contains(exp, []byte(`user_id`)) {
			t.Errorf("export of a session without user_id names it: %.300s", exp)
		}
	})
}
