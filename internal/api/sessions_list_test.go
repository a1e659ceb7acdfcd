package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// TestListSessionsByTitle: the title filter finds the titles that contain
// the text, A–Z without regard to case and every other character exactly
// (LIKE's and MATCH's own characters included), follows renames, forks and
// purges, and pages either way.
func TestListSessionsByTitle(t *testing.T) {
	c := newClient(t)
	titles := []any{
		"Refund for order 1234", // 0
		"REFUND later",          // 1
		"refunds: 50% off",      // 2
		"under_score",           // 3
		`back\slash`,            // 4
		`quote "x" here`,        // 5
		"Café crème",            // 6
		"naïve CAFÉ",            // 7
		nil,                     // 8
		"日本語のタイトル",              // 9
	}
	var made []model.Session
	for _, title := range titles {
		made = append(made, mustCreateSession(t, c, map[string]any{"title": title}))
		time.Sleep(2 * time.Millisecond) // distinct created_at: a stable order to compare
	}
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
		name, title, want string
	}{
		{"word_any_case", "refund", "210"},
		{"upper_finds_lower", "FUND", "210"},
		{"two_words", "for order", "0"},
		{"short_text", "re", "53210"},
		{"one_letter", "q", "5"},
		{"percent_is_literal", "50%", "2"},
		{"lone_percent", "%", "2"},
		{"underscore_is_literal", "_", "3"},
		{"backslash", `\`, "4"},
		{"double_quotes", `"x"`, "5"},
		{"non_ascii_exact", "café", "6"},
		{"non_ascii_case_not_folded", "CAFÉ", "7"},
		{"cjk", "タイトル", "9"},
		{"no_match", "zebra", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{1, 50} {
				q := "/v1/sessions?title=" + url.QueryEscape(tc.title)
				if got := ids(listAll[model.Session](t, c, q, limit)); got != tc.want {
					t.Errorf("limit %d: got %q, want %q", limit, got, tc.want)
				}
				want := []rune(tc.want)
				for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
					want[i], want[j] = want[j], want[i]
				}
				if got := ids(listAll[model.Session](t, c, q+"&order=asc", limit)); got != string(want) {
					t.Errorf("oldest first, limit %d: got %q, want %q", limit, got, string(want))
				}
			}
		})
	}

	t.Run("follows_renames_forks_and_purges", func(t *testing.T) {
		c.do("PATCH", "/v1/sessions/"+made[1].ID, map[string]any{"title": "Later, maybe"}).want(t, http.StatusOK, nil)
		c.do("PATCH", "/v1/sessions/"+made[8].ID, map[string]any{"title": "A refund at last"}).want(t, http.StatusOK, nil)
		c.do("PATCH", "/v1/sessions/"+made[0].ID, map[string]any{"title": nil}).want(t, http.StatusOK, nil)
		var fork model.Session
		c.do("POST", "/v1/sessions/"+made[2].ID+"/fork", map[string]any{}).want(t, http.StatusCreated, &fork)
		c.do("DELETE", "/v1/sessions/"+made[2].ID+"?purge=true", nil).want(t, http.StatusNoContent, nil)
		got := listAll[model.Session](t, c, "/v1/sessions?title=refund", 50)
		if len(got) != 2 || got[0].ID != fork.ID || got[1].ID != made[8].ID {
			t.Errorf("after the changes: got %v, want the fork %s then %s", sessionIDs(got), fork.ID, made[8].ID)
		}
	})

	t.Run("bad_values_are_400", func(t *testing.T) {
		p := c.do("GET", "/v1/sessions?title="+strings.Repeat("x", model.MaxTitleFilter+1), nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
		if len(p.Errors) != 1 || p.Errors[0].Field != "title" {
			t.Errorf("errors: got %+v, want one naming title", p.Errors)
		}
		c.do("GET", "/v1/sessions?order=newest", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
		c.do("GET", "/v1/sessions?count=yes", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
	})
	t.Run("cursor_is_bound_to_title_and_order", func(t *testing.T) {
		var p model.Page[model.Session]
		c.do("GET", "/v1/sessions?title=e&limit=1", nil).want(t, http.StatusOK, &p)
		c.do("GET", "/v1/sessions?title=e&order=asc&limit=1&cursor="+*p.NextCursor, nil).wantProblem(t, http.StatusBadRequest, "invalid_cursor")
		c.do("GET", "/v1/sessions?title=a&limit=1&cursor="+*p.NextCursor, nil).wantProblem(t, http.StatusBadRequest, "invalid_cursor")
		c.do("GET", "/v1/sessions?limit=1&cursor="+*p.NextCursor, nil).wantProblem(t, http.StatusBadRequest, "invalid_cursor")
	})
}

// TestListSessionsCount: count=true adds how many sessions the filters
// select, every page together; without it total is null.
func TestListSessionsCount(t *testing.T) {
	c := newClient(t)
	for i := range 7 {
		body := map[string]any{"title": []string{"alpha", "beta"}[i%2]}
		if i < 3 {
			body["agent_id"] = "counted"
		}
		mustCreateSession(t, c, body)
	}
	cases := []struct {
		name, query string
		want        int64
	}{
		{"all", "", 7},
		{"agent", "agent_id=counted", 3},
		{"title", "title=ALPHA", 4},
		{"agent_and_title", "agent_id=counted&title=beta", 1},
		{"none", "status=archived", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p model.SessionPage
			c.do("GET", "/v1/sessions?count=true&limit=2&"+tc.query, nil).want(t, http.StatusOK, &p)
			if p.Total == nil || p.Total.Count != tc.want || !p.Total.Exact {
				t.Fatalf("total: got %+v, want %d, exact", p.Total, tc.want)
			}
			if len(p.Data) != int(min(2, tc.want)) {
				t.Errorf("the page: got %d sessions, want %d", len(p.Data), min(2, tc.want))
			}
		})
	}
	t.Run("not_asked_is_null", func(t *testing.T) {
		r := c.do("GET", "/v1/sessions?limit=1", nil).want(t, http.StatusOK, nil)
		if !strings.Contains(string(r.Body), `"total":null`) {
			t.Errorf("body: %s", r.Body)
		}
	})
	t.Run("a_key_bound_to_a_user_counts_its_own", func(t *testing.T) {
		user := "counted-user"
		k, err := c.store.CreateAPIKey(t.Context(), model.DefaultTenant, model.CreateAPIKey{Scope: model.ScopeWrite, UserID: &user})
		if err != nil {
			t.Fatal(err)
		}
		u := c.as(k.Key)
		mustCreateSession(t, u, map[string]any{"title": "alpha of the user"})
		var p model.SessionPage
		u.do("GET", "/v1/sessions?count=true&title=alpha", nil).want(t, http.StatusOK, &p)
		if p.Total == nil || p.Total.Count != 1 || len(p.Data) != 1 {
			t.Errorf("the user's count: got %+v with %d sessions, want 1", p.Total, len(p.Data))
		}
		u.do("GET", "/v1/sessions?count=true&user_id=someone-else", nil).want(t, http.StatusOK, &p)
		if p.Total == nil || p.Total.Count != 0 {
			t.Errorf("another user's count: got %+v, want 0", p.Total)
		}
	})
}

func sessionIDs(ss []model.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}
