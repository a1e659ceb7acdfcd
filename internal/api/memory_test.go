package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func mustCreateAgent(t testing.TB, c *client, body map[string]any) model.Agent {
	t.Helper()
	var a model.Agent
	c.do("POST", "/v1/agents", body).want(t, http.StatusCreated, &a)
	return a
}

func TestAgents(t *testing.T) {
	c := newClient(t)
	a := mustCreateAgent(t, c, map[string]any{"name": "support", "model": "gpt-4o", "tags": []string{"prod", "eu"},
		"tool_ids": []string{"core_memory_append"}, "metadata": map[string]any{"team": "x"}})
	if !strings.HasPrefix(a.ID, "agt_") || a.AgentType != model.DefaultAgentType || len(a.Tags) != 2 || a.System != nil {
		t.Fatalf("created %+v", a)
	}
	mustCreateAgent(t, c, map[string]any{"id": "helper-2", "name": "helper", "tags": []string{"dev"}})
	c.do("POST", "/v1/agents", map[string]any{"id": "helper-2", "name": "again"}).wantProblem(t, http.StatusConflict, "conflict")
	c.do("POST", "/v1/agents", map[string]any{}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")

	for _, tc := range []struct{ query, want string }{
		{"", "helper-2," + a.ID},
		{"tag=prod", a.ID},
		{"name=helper", "helper-2"},
		{"tag=nope", ""},
	} {
		var ids []string
		for _, ag := range listAll[model.Agent](t, c, "/v1/agents?"+tc.query, 1) {
			ids = append(ids, ag.ID)
		}
		if got := strings.Join(ids, ","); got != tc.want {
			t.Errorf("?%s: %s, want %s", tc.query, got, tc.want)
		}
	}

	var up model.Agent
	c.do("PATCH", "/v1/agents/"+a.ID, map[string]any{"system": "Be brief.", "model": nil, "metadata": map[string]any{"team": nil, "tier": 1}}).
		want(t, http.StatusOK, &up)
	if *up.System != "Be brief." || up.Model != nil || mustJSON(t, up.Metadata) != `{"tier":1}` || up.Name != "support" {
		t.Errorf("patched %+v", up)
	}
	c.do("PATCH", "/v1/agents/"+a.ID, map[string]any{"name": ""}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")

	c.do("PUT", "/v1/agents/"+a.ID+"/blocks/human", map[string]any{"value": "x"}).want(t, http.StatusCreated, nil)
	c.do("DELETE", "/v1/agents/"+a.ID, nil).want(t, http.StatusNoContent, nil)
	c.do("GET", "/v1/agents/"+a.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("GET", "/v1/agents/"+a.ID+"/blocks/human", nil).wantProblem(t, http.StatusNotFound, "not_found")
}

func TestBlocksOverHTTP(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	base := "/v1/agents/a/blocks/"

	var b model.Block
	res := c.do("PUT", base+"human", map[string]any{"value": "Name: Ann", "limit": 30, "description": "about the user"}).
		want(t, http.StatusCreated, &b)
	if res.Header.Get("ETag") != `"1"` || b.Version != 1 || b.Limit != 30 || !strings.HasPrefix(b.ID, "blk_") {
		t.Fatalf("created %+v, ETag %s", b, res.Header.Get("ETag"))
	}
	t.Run("if_match", func(t *testing.T) {
		c.do("PUT", base+"human", map[string]any{"value": "Name: Bo", "limit": 30}, "If-Match", `"9"`).
			wantProblem(t, http.StatusPreconditionFailed, "precondition_failed")
		c.do("PUT", base+"human", map[string]any{"value": "Name: Bo", "limit": 30}, "If-Match", `"1"`).want(t, http.StatusOK, &b)
		c.do("PUT", base+"other", map[string]any{"value": "x"}, "If-Match", `"1"`).
			wantProblem(t, http.StatusPreconditionFailed, "precondition_failed")
		if b.Version != 2 || b.Value != "Name: Bo" {
			t.Errorf("after If-Match put: %+v", b)
		}
	})
	t.Run("append_replace_limit", func(t *testing.T) {
		c.do("POST", base+"human/append", map[string]any{"content": "Likes tea"}).want(t, http.StatusOK, &b)
		if b.Value != "Name: Bo\nLikes tea" || b.Version != 3 {
			t.Errorf("appended: %q v%d", b.Value, b.Version)
		}
		p := c.do("POST", base+"human/append", map[string]any{"content": "and a great deal of other things"}).
			wantProblem(t, http.StatusUnprocessableEntity, "limit_exceeded")
		if !strings.Contains(p.Detail, "over its limit of 30") {
			t.Errorf("limit detail %q does not say how far over", p.Detail)
		}
		c.do("POST", base+"human/replace", map[string]any{"old": "tea", "new": "coffee"}).want(t, http.StatusOK, &b)
		c.do("POST", base+"human/replace", map[string]any{"old": "tea", "new": "x"}).
			wantProblem(t, http.StatusUnprocessableEntity, "old_not_found")
		if b.Value != "Name: Bo\nLikes coffee" {
			t.Errorf("replaced: %q", b.Value)
		}
	})
	t.Run("append_creates", func(t *testing.T) {
		c.do("POST", base+"scratch/append", map[string]any{"content": "first"}).want(t, http.StatusOK, &b)
		if b.Value != "first" || b.Limit != model.DefaultBlockLimit || b.Version != 1 {
			t.Errorf("append-or-create: %+v", b)
		}
	})
	t.Run("history_newest_first", func(t *testing.T) {
		hist := listAll[model.Block](t, c, base+"human/history", 2)
		var versions []string
		for _, h := range hist {
			versions = append(versions, strconv.FormatInt(h.Version, 10)+":"+h.Value)
		}
		want := "4:Name: Bo\nLikes coffee|3:Name: Bo\nLikes tea|2:Name: Bo|1:Name: Ann"
		if got := strings.Join(versions, "|"); got != want {
			t.Errorf("history %q, want %q", got, want)
		}
	})
	t.Run("list_and_delete", func(t *testing.T) {
		var list struct{ Data []model.Block }
		c.do("GET", "/v1/agents/a/blocks", nil).want(t, http.StatusOK, &list)
		if len(list.Data) != 2 || list.Data[0].Label != "human" || list.Data[1].Label != "scratch" {
			t.Errorf("blocks %+v", list.Data)
		}
		c.do("DELETE", base+"scratch", nil).want(t, http.StatusNoContent, nil)
		c.do("DELETE", base+"scratch", nil).wantProblem(t, http.StatusNotFound, "not_found")
		c.do("GET", base+"scratch/history", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})
	t.Run("bad_input", func(t *testing.T) {
		c.do("PUT", base+"bad%20label", map[string]any{"value": "x"}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("PUT", base+"human", map[string]any{"value": "x", "limit": 0.5}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("POST", base+"human/append", map[string]any{}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("PUT", "/v1/agents/ghost/blocks/human", map[string]any{"value": "x"}).wantProblem(t, http.StatusNotFound, "not_found")
	})
}

func TestArchivalOverHTTP(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	var p model.Passage
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "The user's dog is called Rex.", "tags": []string{"pets"}}).
		want(t, http.StatusCreated, &p)
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "The user lives in Porto."}).want(t, http.StatusCreated, nil)

	var hits struct{ Data []model.PassageHit }
	c.do("GET", "/v1/agents/a/archival/search?q="+urlq(`dog's name "Rex`), nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 1 || hits.Data[0].ID != p.ID || !strings.Contains(hits.Data[0].Snippet, "[Rex]") {
		t.Fatalf("search: %+v", hits.Data)
	}
	c.do("GET", "/v1/agents/a/archival/search?q=user&tags=pets", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 1 {
		t.Errorf("tag filter: %d hits", len(hits.Data))
	}
	c.do("GET", "/v1/agents/a/archival/search", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
	for _, q := range []string{`"`, `a AND`, `NEAR(`, `*`, `x:y`, `'; DROP TABLE passages;--`, `)(`} {
		c.do("GET", "/v1/agents/a/archival/search?q="+urlq(q), nil).want(t, http.StatusOK, nil)
	}

	if n := len(listAll[model.Passage](t, c, "/v1/agents/a/archival", 1)); n != 2 {
		t.Errorf("list: %d passages", n)
	}
	c.do("GET", "/v1/agents/a/archival/"+p.ID, nil).want(t, http.StatusOK, nil)
	c.do("DELETE", "/v1/agents/a/archival/"+p.ID, nil).want(t, http.StatusNoContent, nil)
	c.do("GET", "/v1/agents/a/archival/"+p.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("GET", "/v1/agents/a/archival/search?q=Rex", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 0 {
		t.Errorf("a deleted passage is still found")
	}
}

func urlq(s string) string { return url.QueryEscape(s) }

// waitSearchable polls until the writer has indexed every message of the tenant.
func waitSearchable(t *testing.T, c *client) {
	t.Helper()
	for i := 0; ; i++ {
		var res struct {
			IndexLag int64 `json:"index_lag"`
		}
		c.do("GET", "/v1/messages/search?q=x", nil).want(t, http.StatusOK, &res)
		if res.IndexLag == 0 {
			return
		}
		if i > 400 {
			t.Fatalf("index still %d behind", res.IndexLag)
		}
		sleep(25)
	}
}

func TestConversationSearch(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	s1 := mustCreateSession(t, c, map[string]any{"agent_id": "a"})
	s2 := mustCreateSession(t, c, nil)
	mustAppend(t, c, s1.ID, map[string]any{"role": "user", "content": "My flight to Oslo leaves Friday."})
	mustAppend(t, c, s1.ID, map[string]any{"role": "assistant", "content": "Noted your Oslo flight."})
	mustAppend(t, c, s2.ID, map[string]any{"role": "user", "content": "Oslo is cold.", "agent_id": "a"})
	mustAppend(t, c, s2.ID, map[string]any{"role": "user", "content": "Oslo again, but not the agent's."})
	waitSearchable(t, c)

	var res struct {
		Data     []model.MessageHit `json:"data"`
		IndexLag int64              `json:"index_lag"`
	}
	c.do("GET", "/v1/agents/a/messages/search?q=oslo", nil).want(t, http.StatusOK, &res)
	if len(res.Data) != 3 {
		t.Errorf("agent search: %d hits, want its session's 2 and the message carrying its id", len(res.Data))
	}
	c.do("GET", "/v1/agents/a/messages/search?q=oslo&role=assistant", nil).want(t, http.StatusOK, &res)
	if len(res.Data) != 1 || res.Data[0].Seq != 2 || res.Data[0].SessionID != s1.ID || res.Data[0].Snippet != "Noted your [Oslo] flight." {
		t.Errorf("role filter: %+v", res.Data)
	}
	c.do("GET", "/v1/messages/search?q=oslo&session_id="+s2.ID, nil).want(t, http.StatusOK, &res)
	if len(res.Data) != 2 {
		t.Errorf("session filter: %d hits", len(res.Data))
	}
	c.do("GET", "/v1/messages/search?q=oslo&role=robot", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
	c.do("GET", "/v1/agents/ghost/messages/search?q=oslo", nil).wantProblem(t, http.StatusNotFound, "not_found")
}

func TestMemoryTools(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	c.do("PUT", "/v1/agents/a/blocks/human", map[string]any{"value": "Name: Ann", "limit": 40}).want(t, http.StatusCreated, nil)
	c.do("PUT", "/v1/agents/a/blocks/persona", map[string]any{"value": "I am Sam.", "read_only": true}).want(t, http.StatusCreated, nil)
	call := func(tool string, args any) *response { return c.do("POST", "/v1/agents/a/tools/"+tool, args) }
	result := func(res *response, wantErr bool) string {
		t.Helper()
		var r model.ToolResult
		res.want(t, http.StatusOK, &r)
		if r.IsError != wantErr {
			t.Fatalf("is_error = %v, want %v: %q", r.IsError, wantErr, r.Result)
		}
		return r.Result
	}

	var tools struct{ Data []model.ToolDef }
	c.do("GET", "/v1/tools", nil).want(t, http.StatusOK, &tools)
	if len(tools.Data) != 9 || tools.Data[0].Parameters["type"] != "object" {
		t.Fatalf("tools: %+v", tools.Data)
	}

	if got := result(call("core_memory_append", map[string]any{"label": "human", "content": "Likes tea", "request_heartbeat": true}), false); got != "None" {
		t.Errorf("append: %q", got)
	}
	result(call("core_memory_replace", map[string]any{"label": "human", "old_content": "tea", "new_content": "green tea"}), false)
	if b := mustBlock(t, c, "human"); b.Value != "Name: Ann\nLikes green tea" {
		t.Errorf("block after tools: %q", b.Value)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"core_memory_replace", map[string]any{"label": "nope", "old_content": "x"}, "Memory block 'nope' does not exist (available blocks: human, persona)"},
		{"core_memory_append", map[string]any{"label": "human", "content": strings.Repeat("x", 30)}, "Edit failed: Exceeds 40 character limit (requested 56)."},
		{"core_memory_replace", map[string]any{"label": "human", "old_content": "coffee", "new_content": "x"}, "Old content 'coffee' not found in memory block 'human'"},
		{"conversation_search", map[string]any{"query": "x", "start_date": "last week"}, "Invalid date format: last week. Use ISO 8601 format (YYYY-MM-DD or YYYY-MM-DDTHH:MM)"},
	} {
		if got := result(call(tc.tool, tc.args), true); got != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.tool, tc.args, got, tc.want)
		}
	}
	call("core_memory_append", map[string]any{"label": "persona", "content": "x"}).wantProblem(t, http.StatusConflict, "read_only")
	call("core_memory_append", map[string]any{"label": "human"}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	call("core_memory_append", map[string]any{"label": "human", "content": "x", "extra": 1}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	call("rm_rf", map[string]any{}).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("POST", "/v1/agents/ghost/tools/core_memory_append", map[string]any{"label": "human", "content": "x"}).
		wantProblem(t, http.StatusNotFound, "not_found")

	if got := result(call("archival_memory_search", map[string]any{"query": "birthday"}), false); got != "No results found." {
		t.Errorf("empty search: %q", got)
	}
	for i := range 7 {
		result(call("archival_memory_insert", map[string]any{"content": "Ann's birthday party idea #" + strconv.Itoa(i), "tags": []string{"party"}}), false)
	}
	first := result(call("archival_memory_search", map[string]any{"query": "birthday", "page": nil}), false)
	second := result(call("archival_memory_search", map[string]any{"query": "birthday", "page": 1, "tags": []string{"party"}}), false)
	if !strings.HasPrefix(first, "Showing 5 results (page 0): [") || !strings.HasPrefix(second, "Showing 2 results (page 1): [") {
		t.Errorf("pages: %q / %q", first, second)
	}
	var items []map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(first, ": ", 2)[1]), &items); err != nil || items[0]["content"] == nil || items[0]["timestamp"] == nil {
		t.Errorf("archival result is not Letta's JSON list: %v %q", err, first)
	}

	s := mustCreateSession(t, c, map[string]any{"agent_id": "a"})
	mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "I adopted a parrot named Kiwi"})
	waitSearchable(t, c)
	got := result(call("conversation_search", map[string]any{"query": "parrot", "roles": []string{"user"}, "limit": 3, "start_date": "2000-01-01"}), false)
	if !strings.HasPrefix(got, "Showing 1 results: [") || !strings.Contains(got, "Kiwi") {
		t.Errorf("conversation_search: %q", got)
	}
}

func mustBlock(t *testing.T, c *client, label string) model.Block {
	t.Helper()
	var b model.Block
	c.do("GET", "/v1/agents/a/blocks/"+label, nil).want(t, http.StatusOK, &b)
	return b
}
