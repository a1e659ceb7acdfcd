package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// TestExpiredSessionEveryRoute walks every operation under /v1/sessions/{id}
// in openapi.yaml for a session past its expires_at (not yet purged) and wants
// the answer a session that never existed gets: a 404 naming the session, for
// reads and writes alike, so that nothing is written that would then vanish.
// A new route under /v1/sessions/{id} fails here until it has a case. Search
// and usage by session must not show the expired session either, and a fork
// made before it expired keeps reading its inherited history.
func TestExpiredSessionEveryRoute(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	w, _ := adminClients(t, c)
	w.http = &http.Client{Timeout: 10 * time.Second} // a route that streams instead of answering 404 fails, not hangs
	mustCreateAgent(t, w, map[string]any{"id": "exp-agent", "name": "a"})
	mustCreateSession(t, w, map[string]any{"id": "exp", "agent_id": "exp-agent"})
	msg := mustAppend(t, w, "exp", userMsg("expired zebra one"))
	mustAppend(t, w, "exp", map[string]any{"role": "assistant", "content": "expired zebra two", "tokens": 5})
	putCheckpoint(w, "exp", 1, nil, map[string]any{"step": 1}).want(t, http.StatusCreated, nil)
	w.do("POST", "/v1/sessions/exp/compactions", map[string]any{"through_seq": 1, "summary": "s"}).want(t, http.StatusCreated, nil)
	mustCreateSession(t, w, map[string]any{"id": "live", "agent_id": "exp-agent"})
	mustAppend(t, w, "live", userMsg("live zebra"))
	w.do("POST", "/v1/sessions/exp/fork", map[string]any{"id": "exp-fork"}).want(t, http.StatusCreated, nil)
	// Read before it expires, so that a cached lineage must learn of the PATCH.
	if n := len(listAll[model.Message](t, w, "/v1/sessions/exp/messages", 10)); n != 2 {
		t.Fatalf("%d messages before expiry, want 2", n)
	}
	w.do("GET", "/v1/sessions/exp/messages/"+msg.ID, nil).want(t, http.StatusOK, nil)
	// Expired from now on: a PATCH may set a time already past.
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	w.do("PATCH", "/v1/sessions/exp", map[string]any{"expires_at": past}).want(t, http.StatusOK, nil)

	cases := map[string]struct {
		body  any
		query string
	}{
		"getSession":           {nil, ""},
		"updateSession":        {map[string]any{"title": "revived"}, ""},
		"closeSession":         {nil, ""},
		"appendMessage":        {userMsg("lost"), ""},
		"appendMessageBatch":   {map[string]any{"messages": []any{userMsg("lost")}}, ""},
		"listMessages":         {nil, ""},
		"getMessage":           {nil, ""},
		"getMessageEmbedding":  {nil, ""},
		"getMessageByClientId": {nil, ""},
		"putMessageEmbedding":  {map[string]any{"embedding": []float32{1, 0}, "embedding_model": "m"}, ""},
		"putCheckpoint":        {map[string]any{"iteration": 2, "state": map[string]any{}}, ""},
		"patchCheckpoint":      {map[string]any{"iteration": 2, "state_patch": map[string]any{"x": 1}}, ""},
		"getLatestCheckpoint":  {nil, ""},
		"listCheckpoints":      {nil, ""},
		"getCheckpoint":        {nil, ""},
		"createCheckpoint":     {map[string]any{"client_id": "x", "state": map[string]any{}}, ""},
		"putCheckpointWrites": {map[string]any{"checkpoint_id": "x", "task_id": "t",
			"writes": []any{map[string]any{"channel": "c", "value": 1}}}, ""},
		"getCheckpointRetention":    {nil, ""},
		"putCheckpointRetention":    {map[string]any{"keep": "all"}, ""},
		"deleteCheckpointRetention": {nil, ""},
		"resumeSession":             {nil, ""},
		"forkSession":               {map[string]any{}, ""},
		"rewindSession":             {map[string]any{"to_seq": 1}, ""},
		"repairSession":             {map[string]any{}, ""},
		"createCompaction":          {map[string]any{"through_seq": 2, "summary": "lost"}, ""},
		"listCompactions":           {nil, ""},
		"getSessionContext":         {nil, "?max_tokens=100&include=blocks"},
		"streamSessionEvents":       {nil, "?after_seq=0"},
		"exportSession":             {nil, ""},
	}

	// what answers a request for id: its status and problem code, and its
	// detail with the id taken out, which names what was not found.
	what := func(t *testing.T, res *response, id string) string {
		t.Helper()
		var p problem
		_ = json.Unmarshal(res.Body, &p)
		return strings.Join([]string{http.StatusText(res.Status), p.Code, strings.ReplaceAll(p.Detail, id, "ID")}, " | ")
	}
	doc, _ := loadSpec(t)
	covered := 0
	for path, item := range doc.Paths.Map() {
		if path != "/v1/sessions/{id}" && !strings.HasPrefix(path, "/v1/sessions/{id}/") {
			continue
		}
		for method, op := range item.Operations() {
			tc, ok := cases[op.OperationID]
			if !ok {
				t.Errorf("%s %s (%s) has no expired-session case: add one", method, path, op.OperationID)
				continue
			}
			covered++
			fill := func(id string) string {
				return strings.NewReplacer("{id}", id, "{message_id}", msg.ID, "{client_id}", "c1", "{iteration}", "1").Replace(path) + tc.query
			}
			t.Run(op.OperationID, func(t *testing.T) {
				want := what(t, w.do(method, fill("never-was"), tc.body), "never-was")
				got := what(t, w.do(method, fill("exp"), tc.body), "exp")
				if !strings.HasPrefix(want, "Not Found | not_found") {
					t.Fatalf("a session that never was: %s, want a 404 (fix the case's body)", want)
				}
				if got != want {
					t.Errorf("expired session: %s\nnever-existed session: %s", got, want)
				}
			})
		}
	}
	if covered != len(cases) {
		t.Errorf("walked %d operations, the table has %d: a route is gone from the spec", covered, len(cases))
	}

	t.Run("ndjson_stream", func(t *testing.T) {
		w.do("POST", "/v1/sessions/exp/messages", `{"role":"user","content":"lost"}`+"\n", "Content-Type", "application/x-ndjson").
			wantProblem(t, http.StatusNotFound, "not_found")
	})

	t.Run("patch_cannot_revive_it", func(t *testing.T) {
		w.do("PATCH", "/v1/sessions/exp", map[string]any{"expires_at": nil}).wantProblem(t, http.StatusNotFound, "not_found")
	})

	t.Run("fork_keeps_its_history", func(t *testing.T) {
		msgs := listAll[model.Message](t, w, "/v1/sessions/exp-fork/messages", 1)
		if len(msgs) != 2 || msgs[0].Content.String() != "expired zebra one" {
			t.Errorf("fork's history: %+v", msgs)
		}
	})

	t.Run("search_and_usage_leave_it_out", func(t *testing.T) {
		waitSearchable(t, w)
		for _, path := range []string{"/v1/messages/search?q=zebra", "/v1/agents/exp-agent/messages/search?q=zebra"} {
			var hits struct{ Data []model.MessageHit }
			w.do("GET", path, nil).want(t, http.StatusOK, &hits)
			var ids []string
			for _, h := range hits.Data {
				ids = append(ids, h.SessionID)
			}
			if got := strings.Join(ids, " "); strings.Contains(" "+got+" ", " exp ") || !strings.Contains(got, "live") {
				t.Errorf("%s: hits in %q, want live's and none of exp's", path, got)
			}
		}
		var u model.Usage
		w.do("GET", "/v1/usage?group_by=session", nil).want(t, http.StatusOK, &u)
		for _, row := range u.Data {
			if row.Key != nil && *row.Key == "exp" {
				t.Errorf("usage by session shows the expired session: %+v", u.Data)
			}
		}
	})
}
