package api_test

import (
	"net/http"
	"testing"
)

func call(id string) map[string]any {
	return map[string]any{"role": "assistant", "tool_calls": []map[string]any{{"id": id, "name": "f", "arguments": "{}"}}}
}

func result(id string) map[string]any {
	return map[string]any{"role": "tool", "tool_call_id": id, "content": "done"}
}

// A tool result must answer a call of the session, once.
func TestToolResultsPairWithCalls(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	p := c.do("POST", "/v1/sessions/s/messages", result("nobody")).wantProblem(t, http.StatusUnprocessableEntity, "unknown_tool_call")
	if len(p.Errors) != 1 || p.Errors[0].Field != "tool_call_id" {
		t.Errorf("unknown call names %+v", p.Errors)
	}
	mustAppend(t, c, "s", call("a"))
	mustAppend(t, c, "s", result("a"))
	c.do("POST", "/v1/sessions/s/messages", result("a")).wantProblem(t, http.StatusConflict, "duplicate_tool_result")
	// A call earlier in the same batch counts; a second result in it does not pass.
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"messages": []any{call("b"), result("b")}}).want(t, http.StatusCreated, nil)
	p = c.do("POST", "/v1/sessions/s/messages", map[string]any{"messages": []any{call("c"), result("c"), result("c")}}).
		wantProblem(t, http.StatusConflict, "duplicate_tool_result")
	if len(p.Errors) != 1 || p.Errors[0].Field != "messages[2].tool_call_id" {
		t.Errorf("duplicate in a batch names %+v", p.Errors)
	}
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"messages": []any{result("d"), call("d")}}).
		wantProblem(t, http.StatusUnprocessableEntity, "unknown_tool_call")
	// A fork inherits its parent's calls and results up to its fork point.
	mustAppend(t, c, "s", call("e"))
	c.do("POST", "/v1/sessions/s/fork", map[string]any{"id": "f"}).want(t, http.StatusCreated, nil)
	mustAppend(t, c, "f", result("e"))
	c.do("POST", "/v1/sessions/f/messages", result("a")).wantProblem(t, http.StatusConflict, "duplicate_tool_result")
	// The parent answers its own call, as the fork did, independently.
	mustAppend(t, c, "s", result("e"))
	// A rewound result leaves its call open again.
	before := mustGetSession(t, c, "s").LastSeq
	mustRewind(t, c, "s", map[string]any{"to_seq": before - 1})
	mustAppend(t, c, "s", result("e"))
	if s := mustGetSession(t, c, "s"); s.MessageCount != 6 {
		t.Errorf("message_count %d, want 6", s.MessageCount)
	}
}
