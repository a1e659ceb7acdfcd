package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

func putCheckpoint(c *client, sessionID string, iteration int64, expected *int64, state map[string]any) *response {
	body := map[string]any{"iteration": iteration, "state": state}
	if expected != nil {
		body["expected_iteration"] = *expected
	}
	return c.do("PUT", "/v1/sessions/"+sessionID+"/checkpoint", body)
}

func TestCheckpoints(t *testing.T) {
	c := newClient(t, withCheckpointKeep(3))
	s := mustCreateSession(t, c, nil)
	mustAppend(t, c, s.ID, userMsg("hi"))

	var cp model.Checkpoint
	putCheckpoint(c, s.ID, 1, nil, map[string]any{"stop_reason": nil, "b": 2, "a": 1}).want(t, http.StatusCreated, &cp)
	if cp.LastSeq != 1 || cp.Iteration != 1 || len(cp.SHA256) != 64 || string(cp.State) != `{"a":1,"b":2,"stop_reason":null}` {
		t.Fatalf("checkpoint %+v state %s", cp, cp.State)
	}
	t.Run("iteration_must_grow", func(t *testing.T) {
		p := putCheckpoint(c, s.ID, 1, nil, map[string]any{}).wantProblem(t, http.StatusConflict, "stale_iteration")
		if !strings.Contains(p.Detail, "not above") {
			t.Errorf("detail %q", p.Detail)
		}
		zero := int64(0)
		putCheckpoint(c, s.ID, 2, &zero, map[string]any{}).wantProblem(t, http.StatusConflict, "stale_iteration")
	})
	for it := int64(2); it <= 5; it++ {
		prev := it - 1
		putCheckpoint(c, s.ID, it, &prev, map[string]any{"n": it}).want(t, http.StatusCreated, nil)
	}
	t.Run("latest_one_and_pruned_history", func(t *testing.T) {
		var latest model.Checkpoint
		c.do("GET", "/v1/sessions/"+s.ID+"/checkpoint", nil).want(t, http.StatusOK, &latest)
		if latest.Iteration != 5 {
			t.Errorf("latest iteration %d", latest.Iteration)
		}
		hist := listAll[model.Checkpoint](t, c, "/v1/sessions/"+s.ID+"/checkpoints", 2)
		var its []string
		for _, h := range hist {
			its = append(its, fmt.Sprint(h.Iteration))
		}
		if strings.Join(its, ",") != "5,4,3" {
			t.Errorf("kept %v, want the newest 3", its)
		}
		c.do("GET", "/v1/sessions/"+s.ID+"/checkpoints/4", nil).want(t, http.StatusOK, nil)
		c.do("GET", "/v1/sessions/"+s.ID+"/checkpoints/1", nil).wantProblem(t, http.StatusNotFound, "not_found")
		c.do("GET", "/v1/sessions/"+s.ID+"/checkpoints/x", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})
	t.Run("bad_input", func(t *testing.T) {
		c.do("PUT", "/v1/sessions/"+s.ID+"/checkpoint", map[string]any{"iteration": 9}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("PUT", "/v1/sessions/"+s.ID+"/checkpoint", map[string]any{"iteration": 9, "state": []int{1}}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("PUT", "/v1/sessions/"+s.ID+"/checkpoint", map[string]any{"iteration": 9, "state": map[string]any{"pause_until_ms": "soon"}}).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		putCheckpoint(c, "nope", 1, nil, map[string]any{}).wantProblem(t, http.StatusNotFound, "not_found")
		e := mustCreateSession(t, c, nil)
		c.do("GET", "/v1/sessions/"+e.ID+"/checkpoint", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})
}

// Two workers race to resume one session: each reads the latest iteration and
// writes the next with expected_iteration. Exactly one write wins, every time.
func TestTwoWorkersRaceToResume(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	putCheckpoint(c, s.ID, 1, nil, map[string]any{}).want(t, http.StatusCreated, nil)
	for round := int64(1); round <= 20; round++ {
		var r model.Resume
		c.do("GET", "/v1/sessions/"+s.ID+"/resume", nil).want(t, http.StatusOK, &r)
		latest := r.Checkpoint.Iteration
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[w] = putCheckpoint(c, s.ID, latest+1, &latest, map[string]any{"worker": w}).Status
			}()
		}
		wg.Wait()
		won := 0
		for _, st := range statuses {
			if st == http.StatusCreated {
				won++
			} else if st != http.StatusConflict {
				t.Fatalf("round %d: status %d", round, st)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d workers won (%v), want exactly 1", round, won, statuses)
		}
	}
}

func TestDueBefore(t *testing.T) {
	c := newClient(t)
	now := time.Now()
	for i, pause := range []time.Duration{-time.Hour, time.Minute, time.Hour} {
		s := mustCreateSession(t, c, map[string]any{"id": fmt.Sprintf("p%d", i)})
		putCheckpoint(c, s.ID, 1, nil, map[string]any{"pause_until_ms": now.Add(pause).UnixMilli()}).want(t, http.StatusCreated, nil)
	}
	awake := mustCreateSession(t, c, map[string]any{"id": "awake"})
	putCheckpoint(c, awake.ID, 1, nil, map[string]any{"pause_until_ms": nil}).want(t, http.StatusCreated, nil)

	due := func(at time.Time) string {
		var out []string
		for _, s := range listAll[model.Session](t, c, "/v1/sessions?due_before="+urlq(at.UTC().Format(time.RFC3339Nano)), 10) {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	if got := due(now); got != "p0" {
		t.Errorf("due now: %s, want p0", got)
	}
	if got := due(now.Add(2 * time.Minute)); got != "p1,p0" {
		t.Errorf("due in 2m: %s, want p1,p0", got)
	}
	// A newer checkpoint without a pause wakes the session for good.
	putCheckpoint(c, "p0", 2, nil, map[string]any{}).want(t, http.StatusCreated, nil)
	if got := due(now.Add(2 * time.Hour)); got != "p2,p1" {
		t.Errorf("due in 2h: %s, want p2,p1", got)
	}
}

func TestResumeHandsOver(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	mustAppend(t, c, s.ID, userMsg("look up order 7"))
	mustAppend(t, c, s.ID, map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{
		{"id": "call_1", "name": "lookup", "arguments": `{"order":7}`}}})
	putCheckpoint(c, s.ID, 1, nil, map[string]any{"pending_tool_calls": []map[string]any{
		{"id": "call_1", "tool_name": "lookup", "tool_input": map[string]any{"order": 7}, "started_at": "2026-11-22T00:00:00Z"}}}).
		want(t, http.StatusCreated, nil)
	mustAppend(t, c, s.ID, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "shipped"})

	var r model.Resume
	c.do("GET", "/v1/sessions/"+s.ID+"/resume", nil).want(t, http.StatusOK, &r)
	if !r.Validation.OK || r.Checkpoint == nil || r.Checkpoint.Iteration != 1 || len(r.MessagesSinceCheckpoint) != 1 ||
		r.MessagesSinceCheckpoint[0].Seq != 3 || len(r.PendingToolCalls) != 1 || r.PendingToolCalls[0].ID != "call_1" {
		t.Fatalf("resume: %s", mustJSON(t, r))
	}
	e := mustCreateSession(t, c, nil)
	c.do("GET", "/v1/sessions/"+e.ID+"/resume", nil).want(t, http.StatusOK, &r)
	if r.Checkpoint != nil || !r.Validation.OK || len(r.MessagesSinceCheckpoint) != 0 {
		t.Errorf("resume of a new session: %s", mustJSON(t, r))
	}
}

func TestForks(t *testing.T) {
	c := newClient(t)
	p := mustCreateSession(t, c, map[string]any{"id": "parent", "agent_id": "agt", "title": "P"})
	for i := 1; i <= 6; i++ {
		mustAppend(t, c, p.ID, map[string]any{"role": "user", "content": fmt.Sprintf("p%d ocelot", i), "tokens": i, "cost": 0.5})
	}
	var f1 model.Session
	c.do("POST", "/v1/sessions/parent/fork", map[string]any{"id": "f1", "at_seq": 4}).want(t, http.StatusCreated, &f1)
	if *f1.ParentID != "parent" || *f1.ForkedAtSeq != 4 || f1.LastSeq != 4 || f1.MessageCount != 4 || f1.TotalTokens != 10 ||
		f1.TotalCost != 2 || *f1.AgentID != "agt" || *f1.Title != "P" {
		t.Fatalf("fork %+v", f1)
	}
	mustAppend(t, c, "f1", map[string]any{"role": "user", "content": "f1-5 ocelot", "tokens": 100})
	var f2 model.Session
	c.do("POST", "/v1/sessions/f1/fork", map[string]any{"id": "f2", "at_seq": 5, "title": "grandchild"}).want(t, http.StatusCreated, &f2)
	mustAppend(t, c, "f2", map[string]any{"role": "user", "content": "f2-6"})
	var f3 model.Session
	c.do("POST", "/v1/sessions/f1/fork", map[string]any{"id": "f3", "at_seq": 2}).want(t, http.StatusCreated, &f3)

	contents := func(id, query string, limit int) string {
		var out []string
		for _, m := range listAll[model.Message](t, c, "/v1/sessions/"+id+"/messages"+query, limit) {
			if m.SessionID != id {
				t.Errorf("%s lists a message of session %s", id, m.SessionID)
			}
			out = append(out, fmt.Sprintf("%d:%s", m.Seq, strings.Fields(m.Content.Text)[0]))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct{ id, query, want string }{
		{"parent", "", "1:p1 2:p2 3:p3 4:p4 5:p5 6:p6"},
		{"f1", "", "1:p1 2:p2 3:p3 4:p4 5:f1-5"},
		{"f2", "", "1:p1 2:p2 3:p3 4:p4 5:f1-5 6:f2-6"},
		{"f2", "?order=desc", "6:f2-6 5:f1-5 4:p4 3:p3 2:p2 1:p1"},
		{"f2", "?after_seq=3&before_seq=6", "4:p4 5:f1-5"},
		{"f3", "", "1:p1 2:p2"},
	} {
		for _, limit := range []int{1, 2, 50} {
			if got := contents(tc.id, tc.query, limit); got != tc.want {
				t.Errorf("%s%s limit %d: %s, want %s", tc.id, tc.query, limit, got, tc.want)
			}
		}
	}
	// an inherited message reads as the fork's own by id too
	parentMsgs := listAll[model.Message](t, c, "/v1/sessions/parent/messages", 50)
	var m model.Message
	c.do("GET", "/v1/sessions/f2/messages/"+parentMsgs[0].ID, nil).want(t, http.StatusOK, &m)
	if m.SessionID != "f2" || m.Seq != 1 {
		t.Errorf("inherited by id: %+v", m)
	}
	c.do("GET", "/v1/sessions/f3/messages/"+parentMsgs[4].ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	if got := mustGetSession(t, c, "parent"); got.LastSeq != 6 || got.TotalTokens != 21 {
		t.Errorf("appends to forks touched the parent: %+v", got)
	}
	if got := mustGetSession(t, c, "f2"); got.LastSeq != 6 || got.TotalTokens != 110 {
		t.Errorf("f2 counters: %+v", got)
	}
	c.do("POST", "/v1/sessions/parent/fork", map[string]any{"at_seq": 7}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	c.do("POST", "/v1/sessions/nope/fork", map[string]any{}).wantProblem(t, http.StatusNotFound, "not_found")

	waitSearchable(t, c)
	var hits struct{ Data []model.MessageHit }
	c.do("GET", "/v1/messages/search?q=ocelot&session_id=f2&limit=50", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 5 {
		t.Errorf("search in f2: %d hits, want its 5 ocelots (4 inherited)", len(hits.Data))
	}
	for _, h := range hits.Data {
		if h.SessionID != "f2" {
			t.Errorf("hit reads as session %s", h.SessionID)
		}
	}
	var r model.Resume
	c.do("GET", "/v1/sessions/f2/resume", nil).want(t, http.StatusOK, &r)
	if !r.Validation.OK || len(r.MessagesSinceCheckpoint) != 6 {
		t.Errorf("resume of a fork of a fork: ok %v, %d messages, problems %s", r.Validation.OK, len(r.MessagesSinceCheckpoint), mustJSON(t, r.Validation.Problems))
	}
}
