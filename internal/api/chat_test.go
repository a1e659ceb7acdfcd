package api_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// rawContent is the content of a message answer, as the server wrote it.
func rawContent(t testing.TB, body []byte) string {
	t.Helper()
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decode %.200s: %v", body, err)
	}
	return string(m.Content)
}

// pngDataURL is a data: URL of n random bytes (standard base64).
func pngDataURL(n int, seed uint64) string {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)
}

// A message's client id: unique in the session's history (a fork's inherited
// messages included), read back by it, rewound to and replaced from it, and
// kept by forks and by export and import.
func TestMessageClientIDs(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "chat"})
	u1 := mustAppend(t, c, "chat", map[string]any{"role": "user", "content": "hi", "client_id": "u1"})
	if u1.ClientID == nil || *u1.ClientID != "u1" {
		t.Fatalf("client_id came back as %v", u1.ClientID)
	}
	mustAppend(t, c, "chat", map[string]any{"messages": []any{
		map[string]any{"role": "assistant", "content": "hello", "client_id": "a1"},
		map[string]any{"role": "user", "content": "weather?", "client_id": "u 2 é"},
	}})

	var got model.Message
	c.do("GET", "/v1/sessions/chat/messages-by-client-id/"+url.PathEscape("u 2 é"), nil).want(t, http.StatusOK, &got)
	if got.Seq != 3 || got.Content.Text != "weather?" {
		t.Errorf("by client id: seq %d %q, want seq 3", got.Seq, got.Content.Text)
	}
	c.do("GET", "/v1/sessions/chat/messages-by-client-id/nope", nil).wantProblem(t, http.StatusNotFound, "not_found")

	for name, tc := range map[string]struct {
		body   any
		status int
		code   string
		field  string
	}{
		"taken":           {map[string]any{"role": "user", "content": "again", "client_id": "a1"}, 409, "client_id_taken", "client_id"},
		"taken_in_batch":  {map[string]any{"messages": []any{map[string]any{"role": "user", "client_id": "x"}, map[string]any{"role": "user", "client_id": "u1"}}}, 409, "client_id_taken", "messages[1].client_id"},
		"twice_in_batch":  {map[string]any{"messages": []any{map[string]any{"role": "user", "client_id": "x"}, map[string]any{"role": "user", "client_id": "x"}}}, 422, "validation_failed", "messages[1].client_id"},
		"empty":           {map[string]any{"role": "user", "client_id": ""}, 422, "validation_failed", "client_id"},
		"control":         {map[string]any{"role": "user", "client_id": "a\nb"}, 422, "validation_failed", "client_id"},
		"too_long":        {map[string]any{"role": "user", "client_id": strings.Repeat("é", 257)}, 422, "validation_failed", "client_id"},
		"rewind_two_ways": {nil, 422, "validation_failed", "to_seq"},
	} {
		t.Run(name, func(t *testing.T) {
			var res *response
			if tc.body == nil {
				res = c.do("POST", "/v1/sessions/chat/rewind", map[string]any{"to_seq": 1, "to_client_id": "u1"})
			} else {
				res = c.do("POST", "/v1/sessions/chat/messages", tc.body)
			}
			p := res.wantProblem(t, tc.status, tc.code)
			if len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
				t.Errorf("errors %+v, want the first naming %s", p.Errors, tc.field)
			}
		})
	}

	// A fork inherits the ids of its prefix: found through it, and not
	// appended again.
	var fork model.Session
	c.do("POST", "/v1/sessions/chat/fork", map[string]any{"id": "branch", "at_seq": 2}).want(t, http.StatusCreated, &fork)
	c.do("GET", "/v1/sessions/branch/messages-by-client-id/a1", nil).want(t, http.StatusOK, &got)
	if got.Seq != 2 || got.SessionID != "branch" {
		t.Errorf("inherited by client id: %+v", got)
	}
	c.do("GET", "/v1/sessions/branch/messages-by-client-id/"+url.PathEscape("u 2 é"), nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("POST", "/v1/sessions/branch/messages", map[string]any{"role": "user", "client_id": "u1"}).
		wantProblem(t, http.StatusConflict, "client_id_taken")
	mustAppend(t, c, "branch", map[string]any{"role": "user", "content": "other", "client_id": "u 2 é"})

	// Replace from an edited message: it and what follows go, its new
	// version takes its place, in one request.
	var rw model.RewindResult
	c.do("POST", "/v1/sessions/chat/rewind", map[string]any{"from_client_id": "a1", "expected_last_seq": 3,
		"messages": []any{map[string]any{"role": "assistant", "content": "hello again", "client_id": "a1"}}}).
		want(t, http.StatusOK, &rw)
	if rw.RemovedMessages != 2 || len(rw.Messages) != 1 || rw.Messages[0].Seq != 2 || rw.Session.LastSeq != 2 {
		t.Errorf("replace from a1: %+v", rw)
	}
	c.do("POST", "/v1/sessions/chat/rewind", map[string]any{"to_client_id": "u1"}).want(t, http.StatusOK, &rw)
	if rw.Session.LastSeq != 1 {
		t.Errorf("rewind to u1: last_seq %d, want 1", rw.Session.LastSeq)
	}
	p := c.do("POST", "/v1/sessions/chat/rewind", map[string]any{"to_client_id": "gone"}).wantProblem(t, http.StatusNotFound, "not_found")
	if len(p.Errors) != 1 || p.Errors[0].Field != "to_client_id" {
		t.Errorf("rewind to a missing id: %+v", p.Errors)
	}
	// The rewound ids are free again; the fork keeps its own copy of a1.
	mustAppend(t, c, "chat", map[string]any{"role": "assistant", "content": "three", "client_id": "a1"})
	c.do("GET", "/v1/sessions/branch/messages-by-client-id/a1", nil).want(t, http.StatusOK, &got)
	if got.Content.Text != "hello" {
		t.Errorf("the fork's a1 reads %q, want the original", got.Content.Text)
	}

	// Export and import keep them.
	exp := c.do("GET", "/v1/sessions/branch/export", nil).want(t, http.StatusOK, nil)
	var imported model.Session
	c.do("POST", "/v1/sessions/import?as_new=true", exp.Body, "Content-Type", "application/x-ndjson").want(t, http.StatusCreated, &imported)
	c.do("GET", "/v1/sessions/"+imported.ID+"/messages-by-client-id/"+url.PathEscape("u 2 é"), nil).want(t, http.StatusOK, &got)
	if got.Seq != 3 || got.Content.Text != "other" {
		t.Errorf("imported by client id: %+v", got)
	}
}

// data and json parts, and client-side tool calls.
func TestDataPartsJSONToolOutputsAndClientSideCalls(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "d"})
	user := `[{"type":"text","text":"plan my trip"},{"type":"data","name":"weather","value":{"city":"Paris","temps":[18.5,1e3,-0],"ok":null}},{"type":"data","name":"nothing","value":null,"provider_data":{"id":"d-1"}}]`
	res := c.do("POST", "/v1/sessions/d/messages", `{"role":"user","content":`+user+`}`).want(t, http.StatusCreated, nil)
	if got := rawContent(t, res.Body); got != user {
		t.Errorf("data parts came back as\n%s\nwant\n%s", got, user)
	}
	mustAppend(t, c, "d", map[string]any{"role": "assistant", "tool_calls": []any{
		map[string]any{"id": "c1", "name": "ask_user", "arguments": `{"q":"which dates?"}`, "client_side": true},
		map[string]any{"id": "c2", "name": "lookup", "arguments": `{}`},
	}})
	tool := `[{"type":"json","value":{"flights":[{"no":"AF1","price":99.5}]}}]`
	res = c.do("POST", "/v1/sessions/d/messages", `{"role":"tool","tool_call_id":"c2","content":`+tool+`}`).want(t, http.StatusCreated, nil)
	if got := rawContent(t, res.Body); got != tool {
		t.Errorf("json tool output came back as %s", got)
	}
	// The client's call is still open: resume does not call it unanswered.
	var rs model.Resume
	c.do("GET", "/v1/sessions/d/resume", nil).want(t, http.StatusOK, &rs)
	if !rs.Validation.OK || len(rs.Validation.Problems) != 0 {
		t.Errorf("resume with a client-side call open: %+v", rs.Validation)
	}
	var page model.Page[model.Message]
	c.do("GET", "/v1/sessions/d/messages?after_seq=1&limit=1", nil).want(t, http.StatusOK, &page)
	if len(page.Data) != 1 || !page.Data[0].ToolCalls[0].ClientSide || page.Data[0].ToolCalls[1].ClientSide {
		t.Errorf("client_side came back as %+v", page.Data)
	}
	// Its answer comes later, as any tool result.
	mustAppend(t, c, "d", map[string]any{"role": "tool", "tool_call_id": "c1", "content": "May 3 to 7"})
	c.do("POST", "/v1/sessions/d/messages", map[string]any{"role": "tool", "tool_call_id": "c1", "content": "again"}).
		wantProblem(t, http.StatusConflict, "duplicate_tool_result")

	for name, tc := range map[string]struct {
		msg   string
		field string
	}{
		"json_in_assistant": {`{"role":"assistant","content":[{"type":"json","value":1}]}`, "content[0].type"},
		"data_no_name":      {`{"role":"user","content":[{"type":"data","value":1}]}`, "content[0].name"},
		"data_no_value":     {`{"role":"user","content":[{"type":"data","name":"x"}]}`, "content[0].value"},
		"value_on_text":     {`{"role":"user","content":[{"type":"text","text":"x","value":1}]}`, "content[0].value"},
		"name_too_long":     {`{"role":"user","content":[{"type":"data","name":"` + strings.Repeat("n", 257) + `","value":1}]}`, "content[0].name"},
	} {
		t.Run(name, func(t *testing.T) {
			p := c.do("POST", "/v1/sessions/d/messages", tc.msg).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
				t.Errorf("errors %+v, want one naming %s", p.Errors, tc.field)
			}
		})
	}
}

// A data: URL goes in as the providers take it inline, is stored once as a
// file, and every read gives it back exactly as sent; an export carries the
// file, not the base64.
func TestInlineDataURLsAreStoredAsFiles(t *testing.T) {
	c := newClient(t, withMaxFile(3<<20))
	mustCreateSession(t, c, map[string]any{"id": "img"})
	image := pngDataURL(2<<20, 1) // 2 MiB, 2.7 M characters: past a part's 1 Mi
	content := `[{"type":"text","text":"what is this?"},{"type":"image","url":"` + image + `","media_type":"image/png","detail":"high"}]`
	res := c.do("POST", "/v1/sessions/img/messages", `{"role":"user","client_id":"m1","content":`+content+`}`).
		want(t, http.StatusCreated, nil)
	if rawContent(t, res.Body) != content {
		t.Fatalf("the append's answer changed the part")
	}
	var m model.Message
	_ = json.Unmarshal(res.Body, &m)
	reads := map[string]func() string{
		"get": func() string {
			return rawContent(t, c.do("GET", "/v1/sessions/img/messages/"+m.ID, nil).want(t, http.StatusOK, nil).Body)
		},
		"by_client_id": func() string {
			return rawContent(t, c.do("GET", "/v1/sessions/img/messages-by-client-id/m1", nil).want(t, http.StatusOK, nil).Body)
		},
		"list": func() string {
			var p struct{ Data []json.RawMessage }
			c.do("GET", "/v1/sessions/img/messages", nil).want(t, http.StatusOK, &p)
			return rawContent(t, p.Data[0])
		},
		"context": func() string {
			var x struct{ Messages []json.RawMessage }
			c.do("GET", "/v1/sessions/img/context", nil).want(t, http.StatusOK, &x)
			return rawContent(t, x.Messages[0])
		},
	}
	for name, read := range reads {
		if got := read(); got != content {
			t.Errorf("%s: the part came back changed (%d bytes, want %d)", name, len(got), len(content))
		}
	}
	// The same image again is the same file; the export holds it once, and
	// its message lines hold no base64.
	mustAppend(t, c, "img", json.RawMessage(`{"role":"user","content":[{"type":"image","url":"`+image+`"}]}`))
	exp := c.do("GET", "/v1/sessions/img/export", nil).want(t, http.StatusOK, nil)
	files, long := map[string]bool{}, 0
	for _, line := range bytes.Split(exp.Body, []byte("\n")) {
		var f struct{ Type, ID string }
		if bytes.HasPrefix(line, []byte(`{"type":"file"`)) && json.Unmarshal(line, &f) == nil {
			files[f.ID] = true // a file travels in chunks of 256 KiB, one a line
		}
		if bytes.HasPrefix(line, []byte(`{"type":"message"`)) && len(line) > 64<<10 {
			long++
		}
	}
	if len(files) != 1 || long != 0 {
		t.Errorf("export: %d files (want 1), %d message lines past 64 KiB (want 0)", len(files), long)
	}
	var img2 model.Session
	c.do("POST", "/v1/sessions/import?as_new=true", exp.Body, "Content-Type", "application/x-ndjson").want(t, http.StatusCreated, &img2)
	var p struct{ Data []json.RawMessage }
	c.do("GET", "/v1/sessions/"+img2.ID+"/messages", nil).want(t, http.StatusOK, &p)
	if len(p.Data) != 2 || rawContent(t, p.Data[0]) != content {
		t.Errorf("imported: the part came back changed")
	}

	// A rewind's tail and a compaction's messages lift theirs the same way.
	var rw model.RewindResult
	res = c.do("POST", "/v1/sessions/img/rewind", `{"to_seq":1,"messages":[{"role":"user","content":[{"type":"file","url":"`+
		strings.Replace(image, "image/png", "application/pdf", 1)+`","filename":"a.pdf"}]}]}`).want(t, http.StatusOK, &rw)
	if len(rw.Messages) != 1 || !strings.HasSuffix(rw.Messages[0].Content.Parts[0].URL, image[len(image)-40:]) || rw.Messages[0].Content.Parts[0].FileID != "" {
		t.Errorf("rewind's tail: %.300s", res.Body)
	}

	for name, tc := range map[string]struct {
		body, field, says string
	}{
		// Base64 with a line break could not be given back as sent: it stays
		// in the row, where 1 Mi characters is the bound.
		"not_canonical": {`{"role":"user","content":[{"type":"image","url":"` + image[:2<<20] + `\n` + image[2<<20:] + `"}]}`, "content[0].url", "standard base64"},
		"past_max_file": {`{"messages":[{"role":"user","content":[{"type":"image","url":"` + image + `"}]},{"role":"user","content":[{"type":"image","url":"` + pngDataURL(2<<20, 2) + `"}]}]}`, "messages[1].content[0].url", "--max-file-bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			p := c.do("POST", "/v1/sessions/img/messages", tc.body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) == 0 || p.Errors[0].Field != tc.field || !strings.Contains(p.Errors[0].Message, tc.says) {
				t.Errorf("errors %+v, want one naming %s saying %q", p.Errors, tc.field, tc.says)
			}
		})
	}
}

// A page stops early, with a cursor, once its data: URLs would pass what a
// page may hold: reading 200 messages of large images holds a bounded amount.
func TestInlineDataPagesAreBounded(t *testing.T) {
	c := newClient(t, withInflatedPage(4<<20)) // as 64 MiB is to 20 MiB images
	mustCreateSession(t, c, map[string]any{"id": "many"})
	for i := range 5 {
		mustAppend(t, c, "many", json.RawMessage(`{"role":"user","content":[{"type":"image","url":"`+pngDataURL(1<<20, uint64(i))+`"}]}`))
	}
	var seqs []int64
	path := "/v1/sessions/many/messages?limit=10"
	pages := 0
	for ; path != ""; pages++ {
		var p model.Page[model.Message]
		c.do("GET", path, nil).want(t, http.StatusOK, &p)
		if len(p.Data) > 2 {
			t.Errorf("a page of %d messages of 1.4 M characters each (want at most 2 under 4 MiB)", len(p.Data))
		}
		for _, m := range p.Data {
			seqs = append(seqs, m.Seq)
			if len(m.Content.Parts[0].URL) < 1<<20 {
				t.Errorf("seq %d came back without its bytes", m.Seq)
			}
		}
		path = ""
		if p.HasMore {
			path = "/v1/sessions/many/messages?limit=10&cursor=" + url.QueryEscape(*p.NextCursor)
		}
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5]" || pages != 3 {
		t.Errorf("%d pages read seqs %v, want 1..5 once each, two a page", pages, seqs)
	}
}

// A compaction and the messages that replace the history it stands for are
// one write: fenced, atomic, and answered together.
func TestCompactionWithMessages(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "cmp"})
	for i := range 3 {
		mustAppend(t, c, "cmp", map[string]any{"role": "user", "content": fmt.Sprint("turn ", i)})
	}
	body := map[string]any{"through_seq": 3, "expected_last_seq": 3, "tokens": 5,
		"summary":       []any{map[string]any{"type": "reasoning", "encrypted_content": "enc"}},
		"provider_item": map[string]any{"type": "compaction", "encrypted_content": "enc"},
		"messages": []any{
			map[string]any{"role": "user", "content": "turn 2", "client_id": "k1"},
			map[string]any{"role": "assistant", "content": "", "provider_item": map[string]any{"type": "compaction", "encrypted_content": "enc"}},
		}}
	var got model.CompactionResult
	c.do("POST", "/v1/sessions/cmp/compactions", body).want(t, http.StatusCreated, &got)
	if got.ThroughSeq != 3 || len(got.Messages) != 2 || got.Messages[0].Seq != 4 {
		t.Fatalf("compaction with messages: %+v", got)
	}
	var ctx model.Context
	c.do("GET", "/v1/sessions/cmp/context", nil).want(t, http.StatusOK, &ctx)
	if ctx.Compaction == nil || len(ctx.Messages) != 2 || ctx.Messages[0].Seq != 4 {
		t.Errorf("context after it: %+v", ctx)
	}
	// A stale fence writes nothing: no record, no messages.
	body["expected_last_seq"], body["through_seq"] = 3, 5
	c.do("POST", "/v1/sessions/cmp/compactions", body).wantProblem(t, http.StatusConflict, "stale_seq")
	// A refused message refuses the record with it.
	body["expected_last_seq"] = 5
	c.do("POST", "/v1/sessions/cmp/compactions", body).wantProblem(t, http.StatusConflict, "client_id_taken")
	var cs model.Page[model.Compaction]
	c.do("GET", "/v1/sessions/cmp/compactions", nil).want(t, http.StatusOK, &cs)
	if s := mustGetSession(t, c, "cmp"); len(cs.Data) != 1 || s.LastSeq != 5 {
		t.Errorf("after refusals: %d compactions, last_seq %d; want 1 and 5", len(cs.Data), s.LastSeq)
	}
}

// An image or file part may point at a file in the provider's own store
// alone (provider_data.file_id), for a runtime that has that id and not the
// bytes; one with no source at all is refused.
func TestPartsNamingAProviderFile(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "pf"})
	content := `[{"type":"image","detail":"auto","provider_data":{"file_id":"file-abc123"}},{"type":"file","filename":"a.pdf","provider_data":{"file_id":"file-def"}}]`
	res := c.do("POST", "/v1/sessions/pf/messages", `{"role":"user","content":`+content+`}`).want(t, http.StatusCreated, nil)
	if got := rawContent(t, res.Body); got != content {
		t.Errorf("came back as %s", got)
	}
	for _, pd := range []string{``, `,"provider_data":{"file_id":""}`, `,"provider_data":{"file_id":7}`} {
		p := c.do("POST", "/v1/sessions/pf/messages", `{"role":"user","content":[{"type":"image"`+pd+`}]}`).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "content[0].file_id" {
			t.Errorf("an image with %q: %+v", pd, p.Errors)
		}
	}
}
