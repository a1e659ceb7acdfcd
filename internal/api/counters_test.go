package api_test

import (
	"database/sql"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// mustRawDB opens the test server's database file beside the store, as another
// process (or an older build) would, to put rows in states the API refuses.
func mustRawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	requireSQLite(t, "the test edits the database file directly")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Per-message tokens and cost are bounded, and the writer refuses an append that
// would take a session's running totals past theirs: a 422 naming the field and
// the bound, with nothing written.
func TestCounterBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	c := newClient(t, withDB(path))
	mustCreateSession(t, c, map[string]any{"id": "s1"})
	msgs := "/v1/sessions/s1/messages"
	for _, tc := range []struct{ name, body, field string }{
		{"huge_cost", `{"role":"user","cost":1.7e308}`, "cost"},
		{"huge_tokens", `{"role":"user","tokens":9000000000000000000}`, "tokens"},
		{"tokens_past_int64", `{"role":"user","tokens":99999999999999999999}`, "tokens"},
		{"batch_huge_cost", `{"messages":[{"role":"user"},{"role":"user","cost":2e6}]}`, "messages[1].cost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := c.do("POST", msgs, tc.body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
				t.Errorf("errors %+v, want %s", p.Errors, tc.field)
			}
		})
	}
	mustAppend(t, c, "s1", map[string]any{"role": "user", "tokens": model.MaxMessageTokens, "cost": model.MaxMessageCost})

	// Bring the session next to its bounds, as years of traffic would.
	db := mustRawDB(t, path)
	if _, err := db.Exec(`UPDATE sessions SET total_tokens = ?, total_cost = ? WHERE id = 's1'`,
		int64(model.MaxTotalTokens)-10, float64(model.MaxTotalCost)-1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, body, field string }{
		{"total_tokens", `{"role":"user","tokens":11}`, "tokens"},
		{"total_cost", `{"role":"user","cost":2}`, "cost"},
		{"batch_total", `{"messages":[{"role":"user","tokens":5},{"role":"user","tokens":6}]}`, "messages[1].tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := c.do("POST", msgs, tc.body).wantProblem(t, http.StatusUnprocessableEntity, "limit_exceeded")
			if len(p.Errors) != 1 || p.Errors[0].Field != tc.field || !strings.Contains(p.Errors[0].Message, "limit") {
				t.Errorf("errors %+v, want %s and the bound", p.Errors, tc.field)
			}
		})
	}
	if got := mustGetSession(t, c, "s1"); got.MessageCount != 1 {
		t.Errorf("refused appends wrote: message_count %d", got.MessageCount)
	}
	mustAppend(t, c, "s1", map[string]any{"role": "user", "tokens": 10})
}

// No stored value makes a read fail: rows whose counters overflowed in an older
// build (an integer turned REAL, an infinite cost) still read, list, resume,
// export and check, clamped, and the integrity check reports the drift.
func TestOverflowedRowsStillRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	c := newClient(t, withDB(path))
	mustCreateSession(t, c, map[string]any{"id": "bad"})
	mustCreateSession(t, c, map[string]any{"id": "good"})
	mustAppend(t, c, "bad", map[string]any{"role": "user", "content": "x", "tokens": 3, "cost": 0.5})
	mustAppend(t, c, "bad", map[string]any{"role": "user", "content": "y", "tokens": 4, "cost": 0.5})
	db := mustRawDB(t, path)
	for _, q := range []string{
		`UPDATE sessions SET total_tokens = 1.8e19, total_cost = 9e999 WHERE id = 'bad'`,
		`UPDATE messages SET cost = 1.7e308, cum_cost = 9e999, cum_tokens = 1.8e19 WHERE session_id = 'bad' AND seq = 2`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, path := range []string{
		"/v1/sessions/bad", "/v1/sessions", "/v1/sessions/bad/messages", "/v1/sessions/bad/resume",
		"/v1/sessions/bad/export", "/v1/admin/integrity",
	} {
		c.do("GET", path, nil).want(t, http.StatusOK, nil)
	}
	var s model.Session
	c.do("GET", "/v1/sessions/bad", nil).want(t, http.StatusOK, &s)
	if s.TotalTokens <= 0 || s.TotalCost <= 0 {
		t.Errorf("clamped counters %d %v", s.TotalTokens, s.TotalCost)
	}
	var rep model.IntegrityReport
	c.do("GET", "/v1/admin/integrity", nil).want(t, http.StatusOK, &rep)
	if rep.OK || len(rep.CounterDrift) == 0 {
		t.Errorf("integrity report %+v does not show the damaged counters", rep)
	}
	c.do("POST", "/v1/sessions/bad/fork", map[string]any{"at_seq": 2}).want(t, http.StatusCreated, nil)
	c.do("GET", "/v1/admin/integrity?repair=counters", nil).want(t, http.StatusOK, nil)
}
