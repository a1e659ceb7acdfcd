package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// mustUpload stores data as a file of mediaType and returns it.
func mustUpload(t testing.TB, c *client, mediaType string, data []byte) model.File {
	t.Helper()
	var f model.File
	c.do("POST", "/v1/files", data, "Content-Type", mediaType).want(t, http.StatusCreated, &f)
	return f
}

// Content as parts goes in and comes back as it was sent, on every read; its
// text parts and reasoning summaries are what search finds.
func TestContentPartsRoundTrip(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "p"})
	img := mustUpload(t, c, "image/png", []byte("\x89PNG\r\n\x1a\nfake image bytes"))
	body := `{"role":"user","content":[` +
		`{"type":"text","text":"What is in this picture? zanzibar"},` +
		`{"type":"image","file_id":"` + img.ID + `","media_type":"image/png","detail":"high"},` +
		`{"type":"file","url":"https://example.com/a.pdf","media_type":"application/pdf","filename":"a.pdf","provider_data":{"title":"Spec","cache_control":{"type":"ephemeral"}}}]}`
	m := mustAppend(t, c, "p", json.RawMessage(body))
	if len(m.Content.Parts) != 3 || m.Content.Parts[1].FileID != img.ID {
		t.Fatalf("stored content %s", m.Content)
	}
	asst := mustAppend(t, c, "p", json.RawMessage(`{"role":"assistant","content":[`+
		`{"type":"reasoning","summary":["Looked at the image: quokka"],"encrypted_content":"gAAAA-opaque"},`+
		`{"type":"text","text":"A cat.","annotations":[{"type":"url_citation","url":"https://e.com","start_index":0,"end_index":5}]},`+
		`{"type":"refusal","text":"I will not name the cat."}],`+
		`"provider_item":{"type":"message","id":"msg_abc","status":"completed","role":"assistant","content":[]}}`))
	if string(asst.ProviderItem) != `{"type":"message","id":"msg_abc","status":"completed","role":"assistant","content":[]}` {
		t.Errorf("provider_item came back as %s", asst.ProviderItem)
	}
	var got model.Message
	c.do("GET", "/v1/sessions/p/messages/"+m.ID, nil).want(t, http.StatusOK, &got)
	wantJSON, _ := json.Marshal(m.Content)
	gotJSON, _ := json.Marshal(got.Content)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("read back %s, want %s", gotJSON, wantJSON)
	}
	var page model.Page[model.Message]
	c.do("GET", "/v1/sessions/p/messages", nil).want(t, http.StatusOK, &page)
	if len(page.Data) != 2 || !page.Data[1].Content.IsParts() || string(page.Data[1].ProviderItem) == "" {
		t.Errorf("page: %+v", page.Data)
	}
	// Search finds text and summaries, never the encrypted payload or a URL.
	for q, want := range map[string]int{"zanzibar": 1, "quokka": 1, "gAAAA": 0, "example": 0} {
		var res struct {
			Data []struct {
				Seq int64 `json:"seq"`
			} `json:"data"`
		}
		waitIndexed(t, c)
		c.do("GET", "/v1/messages/search?q="+q, nil).want(t, http.StatusOK, &res)
		if len(res.Data) != want {
			t.Errorf("search %q: %d hits, want %d", q, len(res.Data), want)
		}
	}
	// String content stays a string.
	s := mustAppend(t, c, "p", userMsg("plain"))
	if s.Content.IsParts() || s.Content.Text != "plain" {
		t.Errorf("string content came back as %s", s.Content)
	}
}

// Every rule of parts is a 422 naming the part by its index, and nothing of a
// refused message is written.
func TestContentPartsRules(t *testing.T) {
	c := newClient(t)
	other := c.as(mustKey(t, c, "tenant-b", model.ScopeAdmin).Key)
	c = c.as(mustKey(t, c, model.DefaultTenant, model.ScopeAdmin).Key)
	mustCreateSession(t, c, map[string]any{"id": "r"})
	theirs := mustUpload(t, other, "image/png", []byte("their bytes"))
	long := strings.Repeat("x", model.MaxPartChars+1)
	many := make([]string, model.MaxParts+1)
	for i := range many {
		many[i] = `{"type":"text","text":"x"}`
	}
	for _, tc := range []struct {
		name, body, field string
	}{
		{"unknown type", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"video","url":"https://x"}]}`, "content[1].type"},
		{"no type", `{"role":"user","content":[{"text":"a"}]}`, "content[0].type"},
		{"text without text", `{"role":"user","content":[{"type":"text"}]}`, "content[0].text"},
		{"field of another type", `{"role":"user","content":[{"type":"text","text":"a","url":"https://x"}]}`, "content[0].url"},
		{"unknown field", `{"role":"user","content":[{"type":"text","text":"a","colour":"red"}]}`, "content[0].colour"},
		{"image with neither", `{"role":"user","content":[{"type":"image","media_type":"image/png"}]}`, "content[0].file_id"},
		{"image with both", `{"role":"user","content":[{"type":"image","file_id":"file_00000000000000000000000000000000","url":"https://x"}]}`, "content[0].url"},
		{"bad url", `{"role":"user","content":[{"type":"image","url":"javascript:alert(1)"}]}`, "content[0].url"},
		{"bad file id", `{"role":"user","content":[{"type":"file","file_id":"../../etc/passwd"}]}`, "content[0].file_id"},
		{"bad media type", `{"role":"user","content":[{"type":"file","url":"https://x","media_type":"not a type"}]}`, "content[0].media_type"},
		{"missing file", `{"role":"user","content":[{"type":"image","file_id":"file_00000000000000000000000000000000"}]}`, "content[0].file_id"},
		{"another tenant's file", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","file_id":"` + theirs.ID + `"}]}`, "content[1].file_id"},
		{"reasoning from a user", `{"role":"user","content":[{"type":"reasoning","text":"hm"}]}`, "content[0].type"},
		{"empty reasoning", `{"role":"assistant","content":[{"type":"reasoning"}]}`, "content[0].text"},
		{"part too long", `{"role":"user","content":[{"type":"text","text":"` + long + `"}]}`, "content[0].text"},
		{"too many parts", `{"role":"user","content":[` + strings.Join(many, ",") + `]}`, "content"},
		{"content neither", `{"role":"user","content":{"type":"text"}}`, "content"},
		{"annotations not a list", `{"role":"assistant","content":[{"type":"text","text":"a","annotations":{"x":1}}]}`, "content[0].annotations"},
		{"is_error off a tool", `{"role":"user","content":"a","is_error":true}`, "is_error"},
		{"provider_item not an object", `{"role":"user","content":"a","provider_item":[1]}`, "provider_item"},
		{"in a batch", `{"messages":[{"role":"user","content":"ok"},{"role":"user","content":[{"type":"nope"}]}]}`, "messages[1].content[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do("POST", "/v1/sessions/r/messages", tc.body, "Content-Type", "application/json")
			if r.Status == http.StatusRequestEntityTooLarge {
				return // the body limit came first: also refused whole
			}
			p := r.wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
				t.Errorf("errors %+v, want the first to name %s", p.Errors, tc.field)
			}
		})
	}
	if s := mustGetSession(t, c, "r"); s.MessageCount != 0 {
		t.Errorf("%d messages written by refused appends", s.MessageCount)
	}
}

// A tool result may report an error; roles include developer.
func TestToolErrorAndDeveloperRole(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "d"})
	mustAppend(t, c, "d", map[string]any{"role": "developer", "content": "Answer in French."})
	mustAppend(t, c, "d", map[string]any{"role": "assistant", "tool_calls": []map[string]any{{"id": "c1", "name": "f", "arguments": "{}"}}})
	m := mustAppend(t, c, "d", map[string]any{"role": "tool", "tool_call_id": "c1", "is_error": true,
		"content": []map[string]any{{"type": "text", "text": "timeout"}}})
	if !m.IsError || !m.Content.IsParts() {
		t.Errorf("tool result %+v", m)
	}
}
