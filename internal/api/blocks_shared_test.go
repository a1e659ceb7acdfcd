package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// TestSharedBlocks attaches one agent's block to others, as Letta's sleep-time
// agents share their primary agent's memory, through the router, on the
// backend LOGBOOK_TEST_BACKEND names: one block, one version, one history,
// whichever agent reads or writes it.
func TestSharedBlocks(t *testing.T) {
	root := newClient(t)
	c := root.as(mustKey(t, root, "t1", model.ScopeWrite).Key)
	other := root.as(mustKey(t, root, "t2", model.ScopeWrite).Key)
	for _, id := range []string{"primary", "sleeper", "third"} {
		mustCreateAgent(t, c, map[string]any{"id": id, "name": id})
	}
	mustCreateAgent(t, other, map[string]any{"id": "intruder", "name": "intruder"})
	c.do("PUT", "/v1/agents/primary/blocks/human", map[string]any{"value": "Name: Ann"}).want(t, http.StatusCreated, nil)
	c.do("PUT", "/v1/agents/primary/blocks/persona", map[string]any{"value": "I am Sam.", "read_only": true}).want(t, http.StatusCreated, nil)
	get := func(agent, label string) (model.Block, string) {
		t.Helper()
		var b model.Block
		res := c.do("GET", "/v1/agents/"+agent+"/blocks/"+label, nil).want(t, http.StatusOK, &b)
		return b, res.Header.Get("ETag")
	}
	refs := func(b model.Block) string {
		var out []string
		for _, r := range b.SharedWith {
			out = append(out, r.AgentID+"/"+r.Label)
		}
		return strings.Join(out, ",")
	}
	labels := func(agent string) string {
		t.Helper()
		var list struct{ Data []model.Block }
		c.do("GET", "/v1/agents/"+agent+"/blocks", nil).want(t, http.StatusOK, &list)
		var out []string
		for _, b := range list.Data {
			out = append(out, b.Label)
		}
		return strings.Join(out, ",")
	}

	var att model.Block
	res := c.do("POST", "/v1/agents/sleeper/blocks/attach", map[string]any{"agent_id": "primary", "label": "human"}).
		want(t, http.StatusCreated, &att)
	if att.AgentID != "sleeper" || att.Label != "human" || att.OwnerAgentID == nil || *att.OwnerAgentID != "primary" ||
		*att.OwnerLabel != "human" || refs(att) != "sleeper/human" || att.Value != "Name: Ann" || att.Version != 1 {
		t.Fatalf("attached %+v", att)
	}
	if got := res.Header.Get("Location"); got != "/v1/agents/sleeper/blocks/human" {
		t.Errorf("Location %q", got)
	}
	if own, _ := get("primary", "human"); own.OwnerAgentID != nil || refs(own) != "sleeper/human" || own.ID != att.ID {
		t.Errorf("owner's view %+v", own)
	}

	t.Run("writes_through_either_agent_are_one_block", func(t *testing.T) {
		var b model.Block
		c.do("POST", "/v1/agents/sleeper/blocks/human/append", map[string]any{"content": "Likes tea"}).want(t, http.StatusOK, &b)
		if own, etag := get("primary", "human"); own.Value != "Name: Ann\nLikes tea" || etag != `"2"` {
			t.Fatalf("primary sees %q at %s", own.Value, etag)
		}
		c.do("PUT", "/v1/agents/sleeper/blocks/human", map[string]any{"value": "Name: Ann\nLikes coffee"}, "If-Match", `"2"`).
			want(t, http.StatusOK, &b)
		c.do("PUT", "/v1/agents/primary/blocks/human", map[string]any{"value": "lost update"}, "If-Match", `"2"`).
			wantProblem(t, http.StatusPreconditionFailed, "precondition_failed")
		c.do("POST", "/v1/agents/primary/blocks/human/replace", map[string]any{"old": "coffee", "new": "green tea"}).want(t, http.StatusOK, &b)
		if seen, etag := get("sleeper", "human"); seen.Value != "Name: Ann\nLikes green tea" || etag != `"4"` || seen.Version != 4 {
			t.Fatalf("sleeper sees %q at %s", seen.Value, etag)
		}
		for _, agent := range []string{"primary", "sleeper"} {
			hist := listAll[model.Block](t, c, "/v1/agents/"+agent+"/blocks/human/history", 2)
			var versions []string
			for _, h := range hist {
				versions = append(versions, fmt.Sprint(h.Version))
				if h.AgentID != agent || (agent == "sleeper") != (h.OwnerAgentID != nil) {
					t.Errorf("%s's history entry %+v", agent, h)
				}
			}
			if got := strings.Join(versions, ","); got != "4,3,2,1" {
				t.Errorf("%s's history %s, want 4,3,2,1", agent, got)
			}
		}
		if got := labels("sleeper"); got != "human" {
			t.Errorf("sleeper lists %q", got)
		}
	})

	t.Run("memory_tools_and_context", func(t *testing.T) {
		var r model.ToolResult
		c.do("POST", "/v1/agents/sleeper/tools/core_memory_append", map[string]any{"label": "human", "content": "Has a dog"}).
			want(t, http.StatusOK, &r)
		c.do("POST", "/v1/agents/sleeper/tools/memory", map[string]any{"command": "str_replace", "path": "/memories/human",
			"old_str": "dog", "new_str": "cat"}).want(t, http.StatusOK, &r)
		if r.IsError {
			t.Fatalf("str_replace: %+v", r)
		}
		if own, _ := get("primary", "human"); !strings.HasSuffix(own.Value, "\nHas a cat") {
			t.Errorf("primary sees %q after the sleeper's tools", own.Value)
		}
		c.do("POST", "/v1/agents/sleeper/tools/memory", map[string]any{"command": "view", "path": "/memories"}).want(t, http.StatusOK, &r)
		if !strings.Contains(r.Result, "/memories/human") {
			t.Errorf("view lists %q", r.Result)
		}
		mustCreateSession(t, c, map[string]any{"id": "sleep-1", "agent_id": "sleeper"})
		ctx := mustContext(t, c, "sleep-1", "?include=blocks")
		if len(ctx.Blocks) != 1 || ctx.Blocks[0].Label != "human" || ctx.Blocks[0].OwnerAgentID == nil ||
			!strings.HasSuffix(ctx.Blocks[0].Value, "Has a cat") || refs(ctx.Blocks[0]) != "sleeper/human" {
			t.Errorf("context blocks %+v", ctx.Blocks)
		}
	})

	t.Run("read_only_binds_every_agent", func(t *testing.T) {
		c.do("POST", "/v1/agents/sleeper/blocks/attach", map[string]any{"agent_id": "primary", "label": "persona", "as": "p"}).
			want(t, http.StatusCreated, nil)
		c.do("POST", "/v1/agents/sleeper/tools/core_memory_append", map[string]any{"label": "p", "content": "x"}).
			wantProblem(t, http.StatusConflict, "read_only")
		c.do("POST", "/v1/agents/sleeper/blocks/p/detach", nil).want(t, http.StatusNoContent, nil)
	})

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, agent string
			body        map[string]any
			status      int
			code        string
		}{
			{"label_taken", "sleeper", map[string]any{"agent_id": "primary", "label": "human"}, http.StatusConflict, "block_exists"},
			{"twice_under_another_label", "sleeper", map[string]any{"agent_id": "primary", "label": "human", "as": "h2"}, http.StatusConflict, "already_attached"},
			{"an_attachment_not_its_owner", "third", map[string]any{"agent_id": "sleeper", "label": "human"}, http.StatusConflict, "block_attached"},
			{"own_block", "primary", map[string]any{"agent_id": "primary", "label": "human", "as": "h2"}, http.StatusUnprocessableEntity, "validation_failed"},
			{"missing_owner", "third", map[string]any{"agent_id": "ghost", "label": "human"}, http.StatusNotFound, "not_found"},
			{"missing_block", "third", map[string]any{"agent_id": "primary", "label": "nope"}, http.StatusNotFound, "not_found"},
			{"missing_agent", "ghost", map[string]any{"agent_id": "primary", "label": "human"}, http.StatusNotFound, "not_found"},
			{"bad_label", "third", map[string]any{"agent_id": "primary", "label": "human", "as": "no spaces"}, http.StatusUnprocessableEntity, "validation_failed"},
			{"no_owner", "third", map[string]any{"label": "human"}, http.StatusUnprocessableEntity, "validation_failed"},
			{"unknown_field", "third", map[string]any{"agent_id": "primary", "label": "human", "mode": "rw"}, http.StatusUnprocessableEntity, "validation_failed"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := c.do("POST", "/v1/agents/"+tc.agent+"/blocks/attach", tc.body).wantProblem(t, tc.status, tc.code)
				if tc.name == "missing_owner" && !strings.Contains(p.Detail, "ghost") {
					t.Errorf("404 detail %q does not name the missing agent", p.Detail)
				}
			})
		}
		c.do("POST", "/v1/agents/primary/blocks/human/detach", nil).wantProblem(t, http.StatusConflict, "not_attached")
		c.do("POST", "/v1/agents/third/blocks/human/detach", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})

	t.Run("another_tenant_is_not_found", func(t *testing.T) {
		p := other.do("POST", "/v1/agents/intruder/blocks/attach", map[string]any{"agent_id": "primary", "label": "human"}).
			wantProblem(t, http.StatusNotFound, "not_found")
		if !strings.Contains(p.Detail, "primary") {
			t.Errorf("404 detail %q does not name the agent", p.Detail)
		}
		other.do("POST", "/v1/agents/sleeper/blocks/attach", map[string]any{"agent_id": "intruder", "label": "human"}).
			wantProblem(t, http.StatusNotFound, "not_found")
		other.do("GET", "/v1/agents/sleeper/blocks/human", nil).wantProblem(t, http.StatusNotFound, "not_found")
		other.do("POST", "/v1/agents/sleeper/blocks/human/detach", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})

	t.Run("rename_alias_or_owner", func(t *testing.T) {
		var r model.ToolResult
		c.do("POST", "/v1/agents/sleeper/tools/memory", map[string]any{"command": "rename", "old_path": "/memories/human",
			"new_path": "/memories/user"}).want(t, http.StatusOK, &r)
		if got := labels("sleeper") + "|" + labels("primary"); got != "user|human,persona" {
			t.Fatalf("after renaming the alias: %s", got)
		}
		c.do("POST", "/v1/agents/primary/tools/memory", map[string]any{"command": "rename", "old_path": "/memories/human",
			"new_path": "/memories/people"}).want(t, http.StatusOK, &r)
		seen, _ := get("sleeper", "user")
		if seen.OwnerLabel == nil || *seen.OwnerLabel != "people" || refs(seen) != "sleeper/user" || seen.Version != 6 {
			t.Errorf("after renaming the owner's block the sleeper sees %+v", seen)
		}
		c.do("POST", "/v1/agents/primary/tools/memory", map[string]any{"command": "rename", "old_path": "/memories/people",
			"new_path": "/memories/persona"}).want(t, http.StatusOK, &r)
		if !r.IsError {
			t.Errorf("rename onto a taken label: %+v", r)
		}
	})

	t.Run("detach_and_delete_leave_nothing_dangling", func(t *testing.T) {
		c.do("POST", "/v1/agents/sleeper/blocks/user/detach", nil).want(t, http.StatusNoContent, nil)
		c.do("GET", "/v1/agents/sleeper/blocks/user", nil).wantProblem(t, http.StatusNotFound, "not_found")
		if own, _ := get("primary", "people"); refs(own) != "" || own.SharedWith == nil {
			t.Errorf("after the detach the owner's block is %+v", own)
		}
		// DELETE through an attachment detaches: the owner's block stays.
		c.do("POST", "/v1/agents/sleeper/blocks/attach", map[string]any{"agent_id": "primary", "label": "people"}).want(t, http.StatusCreated, nil)
		c.do("DELETE", "/v1/agents/sleeper/blocks/people", nil).want(t, http.StatusNoContent, nil)
		get("primary", "people")
		// Deleting the owner's block takes its attachments.
		c.do("POST", "/v1/agents/sleeper/blocks/attach", map[string]any{"agent_id": "primary", "label": "people"}).want(t, http.StatusCreated, nil)
		c.do("DELETE", "/v1/agents/primary/blocks/people", nil).want(t, http.StatusNoContent, nil)
		if got := labels("sleeper"); got != "" {
			t.Errorf("sleeper still lists %q after the owner's block went", got)
		}
		// The label is free again: the sleeper's own block.
		c.do("PUT", "/v1/agents/sleeper/blocks/people", map[string]any{"value": "mine"}).want(t, http.StatusCreated, nil)
		// Deleting the attaching agent takes its attachments.
		c.do("POST", "/v1/agents/third/blocks/attach", map[string]any{"agent_id": "primary", "label": "persona"}).want(t, http.StatusCreated, nil)
		c.do("DELETE", "/v1/agents/third", nil).want(t, http.StatusNoContent, nil)
		if own, _ := get("primary", "persona"); refs(own) != "" {
			t.Errorf("persona still shared with %s after its agent went", refs(own))
		}
		// Deleting the owner agent takes every attachment of its blocks.
		c.do("POST", "/v1/agents/sleeper/blocks/attach", map[string]any{"agent_id": "primary", "label": "persona"}).want(t, http.StatusCreated, nil)
		c.do("DELETE", "/v1/agents/primary", nil).want(t, http.StatusNoContent, nil)
		if got := labels("sleeper"); got != "people" {
			t.Errorf("sleeper lists %q after its owner agent went", got)
		}
		c.do("PUT", "/v1/agents/sleeper/blocks/persona", map[string]any{"value": "mine"}).want(t, http.StatusCreated, nil)
	})
}

// TestSharedBlockConcurrentAppends has two agents append to one shared block
// at once: no append is lost, and the version counts every one.
func TestSharedBlockConcurrentAppends(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	mustCreateAgent(t, c, map[string]any{"id": "b", "name": "b"})
	c.do("PUT", "/v1/agents/a/blocks/log", map[string]any{"value": "start", "limit": 100000}).want(t, http.StatusCreated, nil)
	c.do("POST", "/v1/agents/b/blocks/attach", map[string]any{"agent_id": "a", "label": "log", "as": "shared"}).want(t, http.StatusCreated, nil)
	const n = 50
	var wg sync.WaitGroup
	for _, path := range []string{"/v1/agents/a/blocks/log/append", "/v1/agents/b/blocks/shared/append"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if res := c.do("POST", path, map[string]any{"content": fmt.Sprintf("%s-%d", path[11:12], i)}); res.Status != http.StatusOK {
					t.Errorf("append %d through %s: %d %s", i, path, res.Status, res.Body)
					return
				}
			}
		}()
	}
	wg.Wait()
	var b model.Block
	c.do("GET", "/v1/agents/b/blocks/shared", nil).want(t, http.StatusOK, &b)
	lines := strings.Split(b.Value, "\n")
	if b.Version != 1+2*n || len(lines) != 1+2*n {
		t.Fatalf("version %d with %d lines, want %d of each", b.Version, len(lines), 1+2*n)
	}
	for _, who := range []string{"a", "b"} {
		for i := range n {
			if !slices.Contains(lines, fmt.Sprintf("%s-%d", who, i)) {
				t.Errorf("lost %s-%d", who, i)
			}
		}
	}
}
