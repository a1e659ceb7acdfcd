package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func mustContext(t testing.TB, c *client, id, query string) model.Context {
	t.Helper()
	var ctx model.Context
	c.do("GET", "/v1/sessions/"+id+"/context"+query, nil).want(t, http.StatusOK, &ctx)
	return ctx
}

func seqList(ms []model.Message) string {
	out := []int64{}
	for _, m := range ms {
		out = append(out, m.Seq)
	}
	return fmt.Sprint(out)
}

// A compaction stands for the messages up to its through_seq: the context reads
// its summary, then what came after; the originals stay.
func TestCompactionAndContext(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "bot", "name": "bot"})
	c.do("PUT", "/v1/agents/bot/blocks/persona", map[string]any{"value": "I am helpful."}).want(t, http.StatusCreated, nil)
	mustCreateSession(t, c, map[string]any{"id": "s", "agent_id": "bot"})
	mustAppend(t, c, "s", map[string]any{"role": "system", "content": "You are a support bot.", "tokens": 5})
	for i := 2; i <= 9; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		mustAppend(t, c, "s", map[string]any{"role": role, "content": fmt.Sprintf("turn %d", i), "tokens": 10})
	}
	all := mustContext(t, c, "s", "")
	if all.Compaction != nil || seqList(all.Messages) != "[1 2 3 4 5 6 7 8 9]" || all.Tokens != 85 || all.Blocks != nil {
		t.Fatalf("no compaction: %s, tokens %d", seqList(all.Messages), all.Tokens)
	}
	var cmp model.Compaction
	c.do("POST", "/v1/sessions/s/compactions", `{"through_seq": 5, "summary": "Turns 2-5 were greetings.",
		"tokens": 7, "provider_item": {"type": "compaction", "encrypted_content": "zzz"}}`).want(t, http.StatusCreated, &cmp)
	got := mustContext(t, c, "s", "")
	if got.Compaction == nil || got.Compaction.ID != cmp.ID || seqList(got.Messages) != "[6 7 8 9]" || got.Tokens != 47 {
		t.Errorf("after compaction: %s, tokens %d", seqList(got.Messages), got.Tokens)
	}
	if string(got.Compaction.ProviderItem) != `{"type":"compaction","encrypted_content":"zzz"}` {
		t.Errorf("provider item %s", got.Compaction.ProviderItem)
	}
	// A budget: the system prompt first, the summary, then the newest that fit.
	fit := mustContext(t, c, "s", "?max_tokens=32&include=blocks")
	if seqList(fit.Messages) != "[1 8 9]" || fit.Tokens != 32 || fit.Omitted.Messages != 2 || fit.Omitted.Tokens != 20 ||
		*fit.Omitted.FirstSeq != 6 || *fit.Omitted.LastSeq != 7 || len(fit.Blocks) != 1 || fit.OverBudget {
		t.Errorf("max_tokens 32: %s tokens %d omitted %+v blocks %d", seqList(fit.Messages), fit.Tokens, fit.Omitted, len(fit.Blocks))
	}
	tiny := mustContext(t, c, "s", "?max_tokens=3")
	if !tiny.OverBudget || seqList(tiny.Messages) != "[1]" {
		t.Errorf("max_tokens 3: %s over %v", seqList(tiny.Messages), tiny.OverBudget)
	}
	// The originals stay.
	if got := seqsOf(t, c, "s"); len(got) != 9 {
		t.Errorf("messages after compaction: %v", got)
	}
	var page model.Page[model.Compaction]
	c.do("GET", "/v1/sessions/s/compactions", nil).want(t, http.StatusOK, &page)
	if len(page.Data) != 1 || page.Data[0].ThroughSeq != 5 {
		t.Errorf("compactions: %+v", page.Data)
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"through_seq": 5, "summary": "again"}, "through_seq"},
		{map[string]any{"through_seq": 10, "summary": "future"}, "through_seq"},
		{map[string]any{"through_seq": 7}, "summary"},
		{map[string]any{"through_seq": 7, "summary": []map[string]any{{"type": "image", "url": "https://x"}}}, "summary[0].type"},
		{map[string]any{"through_seq": 0, "summary": "x"}, "through_seq"},
	} {
		p := c.do("POST", "/v1/sessions/s/compactions", tc.body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
			t.Errorf("%v: %+v", tc.body, p.Errors)
		}
	}
	c.do("GET", "/v1/sessions/s/context?max_tokens=-1", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
	c.do("GET", "/v1/sessions/s/context?include=everything", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")

	// A fork at seq 7 keeps the compaction; a rewind below it removes it.
	c.do("POST", "/v1/sessions/s/fork", map[string]any{"id": "f", "at_seq": 7}).want(t, http.StatusCreated, nil)
	fc := mustContext(t, c, "f", "")
	if fc.Compaction == nil || seqList(fc.Messages) != "[6 7]" {
		t.Errorf("fork's context: %s", seqList(fc.Messages))
	}
	for _, m := range append(fc.Messages, mustContext(t, c, "f", "?max_tokens=100").Messages...) {
		if m.SessionID != "f" {
			t.Errorf("fork's context: message %d reads as %q's, not the fork's", m.Seq, m.SessionID)
		}
	}
	res := mustRewind(t, c, "s", map[string]any{"to_seq": 4})
	if res.RemovedCompactions != 1 || mustContext(t, c, "s", "").Compaction != nil {
		t.Errorf("rewind below the compaction: %+v", res)
	}
}

// The window never splits an assistant's tool calls from their results and
// never starts with an orphan result.
func TestContextKeepsToolCallsWithTheirResults(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	mustAppend(t, c, "s", map[string]any{"role": "user", "content": "look both up", "tokens": 10})
	mustAppend(t, c, "s", map[string]any{"role": "assistant", "tokens": 10, "tool_calls": []map[string]any{
		{"id": "a", "name": "f", "arguments": "{}"}, {"id": "b", "name": "f", "arguments": "{}"}}})
	mustAppend(t, c, "s", map[string]any{"role": "tool", "tool_call_id": "a", "content": "A", "tokens": 10})
	mustAppend(t, c, "s", map[string]any{"role": "tool", "tool_call_id": "b", "content": "B", "tokens": 10})
	mustAppend(t, c, "s", map[string]any{"role": "assistant", "content": "both done", "tokens": 10})
	for budget, want := range map[int]string{50: "[1 2 3 4 5]", 40: "[2 3 4 5]", 30: "[5]", 20: "[5]", 10: "[5]", 0: "[]"} {
		got := mustContext(t, c, "s", fmt.Sprintf("?max_tokens=%d", budget))
		if seqList(got.Messages) != want {
			t.Errorf("max_tokens %d: %s, want %s", budget, seqList(got.Messages), want)
		}
	}
}
