package api_test

import (
	"net/http"
	"testing"
)

// JSON may carry U+0000 in a string. SQLite stores it; PostgreSQL's text
// cannot, so there it is a 422 saying so, never a 500, and nothing is stored.
func TestNulInText(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	for _, tc := range []struct{ path, body string }{
		{"/v1/sessions/s/messages", `{"role": "user", "content": "a\u0000b"}`},
		{"/v1/sessions/s/messages", `{"role": "user", "content": [{"type": "text", "text": "a\u0000b"}]}`},
		{"/v1/sessions", `{"id": "t", "title": "a\u0000b"}`},
	} {
		r := c.do("POST", tc.path, tc.body)
		if onPostgres {
			r.wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		} else {
			r.want(t, http.StatusCreated, nil)
		}
	}
	want := int64(2)
	if onPostgres {
		want = 0
	}
	if s := mustGetSession(t, c, "s"); s.LastSeq != want {
		t.Errorf("last_seq %d, want %d", s.LastSeq, want)
	}
}
