package api_test

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// Import is a second way into the database: it must refuse whatever an append,
// a create or a checkpoint PUT refuses, naming the line and the field, and
// write nothing.
func TestImportAppliesTheAPIsRules(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"id": "src", "title": "t"})
	mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "hello", "name": "ann", "tokens": 5, "cost": 0.25})
	mustAppend(t, c, s.ID, map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": "c1", "name": "f", "arguments": "{}"}}})
	putCheckpoint(c, s.ID, 1, nil, map[string]any{"pending_tool_calls": []any{}}).want(t, http.StatusCreated, nil)
	lines := splitLines(t, mustExport(t, c, s.ID)) // session, 2 messages, checkpoint, end
	c.do("DELETE", "/v1/sessions/src?purge=true", nil).want(t, http.StatusNoContent, nil)

	edit := func(n int, old, new string) []byte {
		out := make([][]byte, len(lines))
		copy(out, lines)
		if !bytes.Contains(out[n-1], []byte(old)) {
			t.Fatalf("line %d has no %q: %s", n, old, out[n-1])
		}
		out[n-1] = bytes.Replace(out[n-1], []byte(old), []byte(new), 1)
		return reseal(t, out)
	}
	big := strings.Repeat("x", 2<<20)
	cases := []struct {
		name, line, field string
		body              []byte
	}{
		{"content_over_1mib", "line 2", "message.content", edit(2, `"content":"hello"`, `"content":"`+big+`"`)},
		{"title_over_limit", "line 1", "session.title", edit(1, `"title":"t"`, `"title":"`+strings.Repeat("t", 1001)+`"`)},
		{"name_over_limit", "line 2", "message.name", edit(2, `"name":"ann"`, `"name":"`+strings.Repeat("n", 257)+`"`)},
		{"tokens_over_limit", "line 2", "message.tokens", edit(2, `"tokens":5`, `"tokens":9000000000000000000`)},
		{"tool_call_on_user", "line 2", "message.tool_calls", edit(2, `"tool_calls":null`, `"tool_calls":[{"id":"c","name":"f","arguments":"{}"}]`)},
		{"tool_call_arguments_not_json", "line 3", "message.tool_calls[0].arguments", edit(3, `"arguments":"{}"`, `"arguments":"{"`)},
		{"pending_call_without_id", "line 4", "checkpoint.state.pending_tool_calls[0].id", edit(4, `"pending_tool_calls":[]`, `"pending_tool_calls":[{"tool_name":"x"}]`)},
		{"total_cost_disagrees", "line 1", "", edit(1, `"total_cost":0.25`, `"total_cost":7`)},
		{"bad_status", "line 1", "session.status", edit(1, `"status":"active"`, `"status":"done"`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := importNDJSON(c, tc.body, "").wantProblem(t, http.StatusUnprocessableEntity, "invalid_import")
			if len(p.Errors) != 1 || p.Errors[0].Field != tc.line || !strings.HasPrefix(p.Errors[0].Message, tc.field) {
				t.Errorf("errors %+v, want %s naming %s", p.Errors, tc.line, tc.field)
			}
			c.do("GET", "/v1/sessions/src", nil).wantProblem(t, http.StatusNotFound, "not_found")
		})
	}
	mustImport(t, c, bytes.Join(lines, nil), "")
}

// endless is a reader of n bytes that starts like an export line and never ends
// the line: a client streaming one enormous line.
type endless struct{ n, read int }

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.n {
		return 0, io.EOF
	}
	head := `{"type":"session","session":{"id":"x","title":"`
	n := 0
	for n < len(p) && e.read < e.n {
		if e.read < len(head) {
			p[n] = head[e.read]
		} else {
			p[n] = 'a'
		}
		n++
		e.read++
	}
	return n, nil
}

// An import is read a line at a time with a limit per line: one line of 100 MB
// is refused without being held, so the server's memory does not grow with it.
func TestImportOfOneHugeLineStaysSmall(t *testing.T) {
	c := newClient(t)
	const size = 100 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req, _ := http.NewRequest("POST", c.base+"/v1/sessions/import", &endless{n: size})
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	runtime.ReadMemStats(&after)
	if res.StatusCode != http.StatusUnprocessableEntity || !bytes.Contains(body, []byte("longer than")) {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	// Client and server share this process: everything both allocated while a
	// 100 MB body went through must stay far below the body's size.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 40<<20 {
		t.Errorf("the import allocated %d MB for a %d MB line", alloc>>20, size>>20)
	}
}
