package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// driveTo moves a new session to status via PATCH, the way a client would.
func driveTo(t *testing.T, c *client, id string, status model.Status) {
	t.Helper()
	if status == model.StatusCreated {
		return
	}
	c.do("PATCH", "/v1/sessions/"+id, map[string]any{"status": status}).want(t, http.StatusOK, nil)
}

func TestStatusTransitionMatrix(t *testing.T) {
	c := newClient(t)
	allowed := map[[2]model.Status]bool{
		{"created", "active"}: true, {"created", "completed"}: true, {"created", "archived"}: true,
		{"active", "completed"}: true, {"active", "archived"}: true,
		{"completed", "archived"}: true, {"completed", "active"}: true,
	}
	for _, from := range model.Statuses {
		for _, to := range model.Statuses {
			ok := from == to || allowed[[2]model.Status{from, to}]
			name := string(from) + "_to_" + string(to)
			if ok {
				name += "_is_200"
			} else {
				name += "_is_409"
			}
			t.Run(name, func(t *testing.T) {
				s := mustCreateSession(t, c, nil)
				driveTo(t, c, s.ID, from)
				res := c.do("PATCH", "/v1/sessions/"+s.ID, map[string]any{"status": to})
				if !ok {
					p := res.wantProblem(t, http.StatusConflict, "invalid_transition")
					if p.From != string(from) || p.To != string(to) {
						t.Errorf("problem names %s→%s, want %s→%s", p.From, p.To, from, to)
					}
					if got := mustGetSession(t, c, s.ID).Status; got != from {
						t.Errorf("status after refused change = %s, want %s", got, from)
					}
					return
				}
				var got model.Session
				res.want(t, http.StatusOK, &got)
				if got.Status != to {
					t.Fatalf("status = %s, want %s", got.Status, to)
				}
				if closed := to.Closed(); closed != (got.ClosedAt != nil) {
					t.Errorf("closed_at = %v for status %s", got.ClosedAt, to)
				}
			})
		}
	}
}

func TestDeleteIsSoftClose(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"title": "t"})
	mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "hi"})

	var closed model.Session
	c.do("DELETE", "/v1/sessions/"+s.ID, nil).want(t, http.StatusOK, &closed)
	if closed.Status != model.StatusCompleted || closed.ClosedAt == nil {
		t.Fatalf("after DELETE: status %s closed_at %v, want completed with closed_at", closed.Status, closed.ClosedAt)
	}
	t.Run("second_delete_changes_nothing", func(t *testing.T) {
		var again model.Session
		c.do("DELETE", "/v1/sessions/"+s.ID, nil).want(t, http.StatusOK, &again)
		if *again.ClosedAt != *closed.ClosedAt || again.UpdatedAt != closed.UpdatedAt {
			t.Errorf("second DELETE changed the session: %+v vs %+v", again, closed)
		}
	})
	t.Run("messages_are_kept", func(t *testing.T) {
		msgs := listAll[model.Message](t, c, "/v1/sessions/"+s.ID+"/messages", 10)
		if len(msgs) != 1 {
			t.Errorf("got %d messages after close, want 1", len(msgs))
		}
	})
	t.Run("append_to_closed_is_409", func(t *testing.T) {
		c.do("POST", "/v1/sessions/"+s.ID+"/messages", map[string]any{"role": "user", "content": "x"}).
			wantProblem(t, http.StatusConflict, "session_closed")
	})
	t.Run("reopen_clears_closed_at", func(t *testing.T) {
		var open model.Session
		c.do("PATCH", "/v1/sessions/"+s.ID, map[string]any{"status": "active"}).want(t, http.StatusOK, &open)
		if open.Status != model.StatusActive || open.ClosedAt != nil {
			t.Errorf("reopened: status %s closed_at %v", open.Status, open.ClosedAt)
		}
		mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "back"})
	})
	t.Run("delete_archived_is_noop", func(t *testing.T) {
		driveTo(t, c, s.ID, model.StatusArchived)
		var got model.Session
		c.do("DELETE", "/v1/sessions/"+s.ID, nil).want(t, http.StatusOK, &got)
		if got.Status != model.StatusArchived {
			t.Errorf("DELETE of archived: status %s, want archived", got.Status)
		}
	})
	t.Run("delete_missing_is_404", func(t *testing.T) {
		c.do("DELETE", "/v1/sessions/nope", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})
}

func TestCreateSession(t *testing.T) {
	c := newClient(t)
	t.Run("server_id_is_prefixed", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		if !strings.HasPrefix(s.ID, "ses_") || s.Status != model.StatusCreated || s.Metadata == nil {
			t.Errorf("got %+v", s)
		}
	})
	t.Run("client_id_and_location", func(t *testing.T) {
		res := c.do("POST", "/v1/sessions", map[string]any{"id": "run-42:a.b", "agent_id": "agt_x", "title": "T", "metadata": map[string]any{"k": "v"}})
		var s model.Session
		res.want(t, http.StatusCreated, &s)
		if s.ID != "run-42:a.b" || *s.AgentID != "agt_x" || *s.Title != "T" || string(s.Metadata) != `{"k":"v"}` {
			t.Errorf("got %+v", s)
		}
		if loc := res.Header.Get("Location"); loc != "/v1/sessions/run-42:a.b" {
			t.Errorf("Location = %q", loc)
		}
		if got := mustGetSession(t, c, s.ID); got.CreatedAt != s.CreatedAt || got.Title == nil {
			t.Errorf("read back %+v", got)
		}
	})
	t.Run("duplicate_id_is_409", func(t *testing.T) {
		mustCreateSession(t, c, map[string]any{"id": "dup"})
		c.do("POST", "/v1/sessions", map[string]any{"id": "dup"}).wantProblem(t, http.StatusConflict, "conflict")
	})
	t.Run("missing_is_404", func(t *testing.T) {
		c.do("GET", "/v1/sessions/ses_missing", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})
}

func TestUpdateSessionMergesMetadata(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"title": "old", "metadata": map[string]any{
		"keep": 1, "drop": "x", "nested": map[string]any{"a": 1, "b": 2}}})

	var got model.Session
	c.do("PATCH", "/v1/sessions/"+s.ID, map[string]any{
		"title":    nil,
		"metadata": map[string]any{"drop": nil, "new": true, "nested": map[string]any{"b": nil, "c": 3}},
	}, "Content-Type", "application/merge-patch+json").want(t, http.StatusOK, &got)

	if got.Title != nil {
		t.Errorf("title = %v, want cleared", *got.Title)
	}
	want := `{"keep":1,"nested":{"a":1,"c":3},"new":true}`
	if b := mustJSON(t, got.Metadata); b != want {
		t.Errorf("metadata = %s, want %s", b, want)
	}
	if got.UpdatedAt < s.UpdatedAt {
		t.Errorf("updated_at went back: %v < %v", got.UpdatedAt, s.UpdatedAt)
	}
	t.Run("empty_patch_changes_nothing", func(t *testing.T) {
		var same model.Session
		c.do("PATCH", "/v1/sessions/"+s.ID, map[string]any{}).want(t, http.StatusOK, &same)
		if mustJSON(t, same) != mustJSON(t, got) {
			t.Errorf("empty patch changed %s into %s", mustJSON(t, got), mustJSON(t, same))
		}
	})
}

func TestListSessions(t *testing.T) {
	c := newClient(t)
	var made []model.Session
	for i := range 9 {
		body := map[string]any{"metadata": map[string]any{"team": []string{"red", "blue", "green"}[i%3], "n": i % 2, "ok": i%2 == 0, "a.b": "dot"}}
		if i%3 == 0 {
			body["agent_id"] = "agt_1"
		}
		made = append(made, mustCreateSession(t, c, body))
		time.Sleep(2 * time.Millisecond) // distinct created_at, so that the range filters have edges
	}
	driveTo(t, c, made[4].ID, model.StatusActive)
	driveTo(t, c, made[7].ID, model.StatusActive)

	ids := func(ss []model.Session) string {
		var out []string
		for _, s := range ss {
			for i, m := range made {
				if m.ID == s.ID {
					out = append(out, string(rune('0'+i)))
				}
			}
		}
		return strings.Join(out, "")
	}
	cases := []struct {
		name, query, want string
	}{
		{"all_newest_first", "", "876543210"},
		{"status", "status=active", "74"},
		{"agent", "agent_id=agt_1", "630"},
		{"metadata_string", "metadata.team=red", "630"},
		{"metadata_number", "metadata.n=1", "7531"},
		{"metadata_bool", "metadata.ok=true", "86420"},
		{"metadata_two_keys", "metadata.team=red&metadata.n=0", "60"},
		{"metadata_key_with_dot", "metadata.a.b=dot", "876543210"},
		{"metadata_no_match", "metadata.team=purple", ""},
		// deepObject, as openapi.yaml declares it and generated clients send it
		{"metadata_deep_object", "metadata%5Bteam%5D=red", "630"},
		{"metadata_deep_object_unescaped", "metadata[team]=red&metadata[n]=0", "60"},
		{"metadata_deep_object_key_with_dot", "metadata[a.b]=dot", "876543210"},
		{"metadata_both_forms", "metadata.team=red&metadata[n]=0", "60"},
		{"created_after", "created_after=" + url.QueryEscape(made[6].CreatedAt.String()), "87"},
		{"created_before", "created_before=" + url.QueryEscape(made[2].CreatedAt.String()), "10"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{1, 2, 50} {
				if got := ids(listAll[model.Session](t, c, "/v1/sessions?"+tc.query, limit)); got != tc.want {
					t.Errorf("limit %d: got %q, want %q", limit, got, tc.want)
				}
			}
		})
	}
	t.Run("cursor_from_other_filter_is_400", func(t *testing.T) {
		var p model.Page[model.Session]
		c.do("GET", "/v1/sessions?status=active&limit=1", nil).want(t, http.StatusOK, &p)
		c.do("GET", "/v1/sessions?limit=1&cursor="+*p.NextCursor, nil).wantProblem(t, http.StatusBadRequest, "invalid_cursor")
	})
	t.Run("cursor_carries_over_between_metadata_forms", func(t *testing.T) {
		var p model.Page[model.Session]
		c.do("GET", "/v1/sessions?metadata.team=red&limit=1", nil).want(t, http.StatusOK, &p)
		c.do("GET", "/v1/sessions?metadata[team]=red&limit=1&cursor="+*p.NextCursor, nil).want(t, http.StatusOK, &p)
		if got, want := ids(p.Data), "3"; got != want {
			t.Errorf("second page: got %q, want %q", got, want)
		}
	})
	t.Run("unclosed_bracket_is_400", func(t *testing.T) {
		c.do("GET", "/v1/sessions?metadata[team=red", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
	})
}
