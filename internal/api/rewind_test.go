package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// mustRewind rewinds a session and returns what the rewind did.
func mustRewind(t testing.TB, c *client, id string, body map[string]any) model.RewindResult {
	t.Helper()
	var res model.RewindResult
	c.do("POST", "/v1/sessions/"+id+"/rewind", body).want(t, http.StatusOK, &res)
	return res
}

// fill appends n alternating user/assistant messages, each with tokens i and
// cost i/1000 and an idempotency key "k<i>".
func fill(t testing.TB, c *client, id string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		role := "user"
		if i%2 == 0 {
			role = "assistant"
		}
		mustAppend(t, c, id, map[string]any{"role": role, "content": fmt.Sprintf("message number %d", i),
			"tokens": i, "cost": float64(i) / 1000, "idempotency_key": fmt.Sprintf("k%d", i)})
	}
}

func seqsOf(t testing.TB, c *client, id string) []int64 {
	t.Helper()
	var page model.Page[model.Message]
	c.do("GET", "/v1/sessions/"+id+"/messages?limit=200", nil).want(t, http.StatusOK, &page)
	out := []int64{}
	for _, m := range page.Data {
		out = append(out, m.Seq)
	}
	return out
}

// A rewind takes the tail out of every read and every counter, and the next
// append continues right after it.
func TestRewindRemovesTheTail(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	fill(t, c, "s", 1, 3)
	putCheckpoint(c, "s", 1, nil, map[string]any{"at": 3}).want(t, http.StatusCreated, nil)
	fill(t, c, "s", 4, 8) // checkpoint 2 sees last_seq 8
	putCheckpoint(c, "s", 2, nil, map[string]any{"at": 8}).want(t, http.StatusCreated, nil)

	res := mustRewind(t, c, "s", map[string]any{"to_seq": 4, "expected_last_seq": 8})
	if res.RemovedMessages != 4 || len(res.RemovedCheckpoints) != 1 || res.RemovedCheckpoints[0] != 2 {
		t.Errorf("rewind answered %+v", res)
	}
	ses := res.Session
	if ses.LastSeq != 4 || ses.MessageCount != 4 || ses.TotalTokens != 1+2+3+4 || ses.TurnCount != 2 {
		t.Errorf("session after rewind: %+v", ses)
	}
	if got := seqsOf(t, c, "s"); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Errorf("seqs %v", got)
	}
	var latest model.Checkpoint
	c.do("GET", "/v1/sessions/s/checkpoint", nil).want(t, http.StatusOK, &latest)
	if latest.Iteration != 1 {
		t.Errorf("latest checkpoint %d, want 1", latest.Iteration)
	}
	m := mustAppend(t, c, "s", userMsg("after the rewind"))
	if m.Seq != 5 {
		t.Errorf("next append got seq %d, want 5", m.Seq)
	}
	waitSearchable(t, c)
	var hits model.SearchResult[model.MessageHit]
	c.do("GET", "/v1/messages/search?q=number", nil).want(t, http.StatusOK, &hits)
	for _, h := range hits.Data {
		if h.Seq > 4 {
			t.Errorf("search still finds removed seq %d", h.Seq)
		}
	}
	// A retry of a removed keyed append is refused, not written again.
	p := c.do("POST", "/v1/sessions/s/messages", map[string]any{"role": "user", "content": "message number 7",
		"tokens": 7, "cost": 0.007, "idempotency_key": "k7"}).wantProblem(t, http.StatusConflict, "rewound")
	if len(p.Errors) != 1 || p.Errors[0].Field != "idempotency_key" {
		t.Errorf("rewound problem names %+v", p.Errors)
	}
	// Keys of what stayed still replay.
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"role": "user", "content": "message number 3",
		"tokens": 3, "cost": 0.003, "idempotency_key": "k3"}).want(t, http.StatusOK, nil)

	// to_seq 0 clears the session.
	res = mustRewind(t, c, "s", map[string]any{"to_seq": 0})
	if res.Session.LastSeq != 0 || res.Session.TotalTokens != 0 || res.Session.TotalCost != 0 || res.Session.TurnCount != 0 ||
		len(seqsOf(t, c, "s")) != 0 {
		t.Errorf("clear left %+v", res.Session)
	}
}

func TestRewindRefusals(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	fill(t, c, "s", 1, 3)
	var p struct {
		Code    string `json:"code"`
		LastSeq int64  `json:"last_seq"`
	}
	c.do("POST", "/v1/sessions/s/rewind", map[string]any{"to_seq": 1, "expected_last_seq": 2}).
		want(t, http.StatusConflict, &p)
	if p.Code != "stale_seq" || p.LastSeq != 3 {
		t.Errorf("stale rewind: %+v", p)
	}
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{"to_seq": 4}, "to_seq"},
		{map[string]any{}, "to_seq"},
		{map[string]any{"to_seq": -1}, "to_seq"},
		{map[string]any{"to_seq": 1, "messages": []map[string]any{{"role": "nobody"}}}, "messages[0].role"},
		{map[string]any{"to_seq": 1, "colour": "red"}, "colour"},
	} {
		pr := c.do("POST", "/v1/sessions/s/rewind", tc.body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(pr.Errors) == 0 || pr.Errors[0].Field != tc.field {
			t.Errorf("%v: errors %+v, want %s", tc.body, pr.Errors, tc.field)
		}
	}
	c.do("POST", "/v1/sessions/s/rewind", map[string]any{"to_seq": 1}, "Idempotency-Key", strings.Repeat("x", 256)).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	c.do("POST", "/v1/sessions/nope/rewind", map[string]any{"to_seq": 0}).wantProblem(t, http.StatusNotFound, "not_found")
	if s := mustGetSession(t, c, "s"); s.LastSeq != 3 {
		t.Fatalf("refused rewinds changed the session: %+v", s)
	}
	c.do("DELETE", "/v1/sessions/s", nil).want(t, http.StatusOK, nil)
	c.do("POST", "/v1/sessions/s/rewind", map[string]any{"to_seq": 1}).wantProblem(t, http.StatusConflict, "session_closed")
}

// A rewind with messages replaces the tail in one transaction; the new tail may
// reuse the keys of the old one.
func TestRewindReplacesTheTail(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	fill(t, c, "s", 1, 5)
	res := mustRewind(t, c, "s", map[string]any{"to_seq": 3, "expected_last_seq": 5, "messages": []map[string]any{
		{"role": "assistant", "content": "a better answer", "idempotency_key": "k4"},
		{"role": "user", "content": "thanks"}}})
	if len(res.Messages) != 2 || res.Messages[0].Seq != 4 || res.Messages[1].Seq != 5 || res.Session.LastSeq != 5 ||
		res.Session.TurnCount != 3 {
		t.Fatalf("replacement: %+v", res)
	}
	// The same request again: its fence stops it.
	c.do("POST", "/v1/sessions/s/rewind", map[string]any{"to_seq": 3, "expected_last_seq": 5, "messages": []map[string]any{
		{"role": "assistant", "content": "a better answer", "idempotency_key": "k4"}}}).want(t, http.StatusOK, nil)
	c.do("POST", "/v1/sessions/s/rewind", map[string]any{"to_seq": 3, "expected_last_seq": 5}).
		wantProblem(t, http.StatusConflict, "stale_seq")
	// A refused replacement changes nothing: the cut is undone with it.
	c.do("POST", "/v1/sessions/s/rewind", map[string]any{"to_seq": 1, "messages": []map[string]any{
		{"role": "user", "content": "x", "tokens": model.MaxMessageTokens}, {"role": "tool", "tool_call_id": "c", "content": "y",
			"is_error": true, "tokens": -1}}}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	if got := seqsOf(t, c, "s"); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Errorf("after a refused rewind: seqs %v", got)
	}
}

// Forks keep what they share of a rewound parent; a fork rewound below its
// fork point shares less of it, and the parent is untouched.
func TestRewindAndForks(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "p"})
	fill(t, c, "p", 1, 6)
	c.do("POST", "/v1/sessions/p/fork", map[string]any{"id": "f", "at_seq": 5}).want(t, http.StatusCreated, nil)
	fill(t, c, "f", 6, 7)
	mustRewind(t, c, "p", map[string]any{"to_seq": 2})
	if got := seqsOf(t, c, "f"); fmt.Sprint(got) != "[1 2 3 4 5 6 7]" {
		t.Errorf("fork after its parent's rewind: %v", got)
	}
	res := mustRewind(t, c, "f", map[string]any{"to_seq": 1})
	if res.Session.LastSeq != 1 || res.Session.TotalTokens != 1 || res.Session.TurnCount != 1 {
		t.Errorf("fork rewound: %+v", res.Session)
	}
	if got := seqsOf(t, c, "p"); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("parent: %v", got)
	}
	mustAppend(t, c, "f", userMsg("new branch"))
	if got := seqsOf(t, c, "f"); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("fork after a new append: %v", got)
	}

	// A fork sharing its prefix, rewound below its fork point, then its parent
	// rewound too: the fork keeps its shorter prefix.
	mustCreateSession(t, c, map[string]any{"id": "q"})
	fill(t, c, "q", 1, 6)
	c.do("POST", "/v1/sessions/q/fork", map[string]any{"id": "g", "at_seq": 6}).want(t, http.StatusCreated, nil)
	mustRewind(t, c, "g", map[string]any{"to_seq": 4})
	mustRewind(t, c, "q", map[string]any{"to_seq": 3})
	if got := seqsOf(t, c, "g"); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Errorf("g: %v", got)
	}
}

// expected_last_seq fences appends: a stale one writes nothing, a replay is
// answered whatever it says.
func TestAppendExpectedLastSeq(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	mustAppend(t, c, "s", map[string]any{"role": "user", "content": "one", "expected_last_seq": 0, "idempotency_key": "a"})
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"role": "user", "content": "two", "expected_last_seq": 0}).
		wantProblem(t, http.StatusConflict, "stale_seq")
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"role": "user", "content": "one", "expected_last_seq": 0,
		"idempotency_key": "a"}).want(t, http.StatusOK, nil)
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"expected_last_seq": 1, "messages": []map[string]any{
		{"role": "user", "content": "two"}, {"role": "assistant", "content": "three"}}}).want(t, http.StatusCreated, nil)
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "x", "expected_last_seq": 3}}}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"role": "user", "content": "x", "expected_last_seq": -1}).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	if s := mustGetSession(t, c, "s"); s.LastSeq != 3 {
		t.Errorf("last_seq %d, want 3", s.LastSeq)
	}
}

// A file that only removed messages referenced goes with them.
func TestRewindReleasesFiles(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	f := mustUpload(t, c, "image/png", []byte("picture in the tail"))
	mustAppend(t, c, "s", userMsg("head"))
	mustAppend(t, c, "s", map[string]any{"role": "user", "content": []map[string]any{{"type": "image", "file_id": f.ID}}})
	mustRewind(t, c, "s", map[string]any{"to_seq": 1})
	c.do("GET", "/v1/files/"+f.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
}
