package api_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/logbook/logbook/internal/model"
)

// These tests hold Logbook to its claim that OpenAI Responses items and
// Anthropic content blocks map in and out without loss. The mappings are
// written here the way a runtime's adapter would write them, against the wire
// format rather than internal/model: every piece of content goes into a typed
// field, where search and other providers' adapters can use it, and only what
// Logbook has no field for (item ids, status, cache_control, a document's title)
// goes into a part's provider_data or a message's provider_item.

// lbMessage is a message as the API takes and returns it.
type lbMessage struct {
	ID           string         `json:"id,omitempty"` // on reads only: an append may not name it
	Role         string         `json:"role"`
	Content      lbContent      `json:"content"`
	ToolCalls    []lbToolCall   `json:"tool_calls,omitempty"`
	ToolCallID   string         `json:"tool_call_id,omitempty"`
	IsError      bool           `json:"is_error,omitempty"`
	ProviderItem map[string]any `json:"provider_item,omitempty"`
}

type lbToolCall struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Arguments    string         `json:"arguments"`
	ProviderData map[string]any `json:"provider_data,omitempty"`
}

// lbContent is a string, or parts when Parts is not nil (an empty array is
// content too: an assistant message that only calls tools).
type lbContent struct {
	Text  string
	Parts []lbPart
}

func (c lbContent) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return json.Marshal(c.Parts)
	}
	return json.Marshal(c.Text)
}

func (c *lbContent) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		c.Parts = []lbPart{}
		return json.Unmarshal(b, &c.Parts)
	}
	return json.Unmarshal(b, &c.Text)
}

type lbPart struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Annotations any     `json:"annotations,omitempty"` // [] is kept: OpenAI sends it
	FileID      string  `json:"file_id,omitempty"`
	URL         string  `json:"url,omitempty"`
	MediaType   string  `json:"media_type,omitempty"`
	Filename    string  `json:"filename,omitempty"`
	Detail      string  `json:"detail,omitempty"`
	// omitzero, not omitempty: a reasoning item whose summary is empty still
	// sends one, or the part would have no content at all.
	Summary          []string       `json:"summary,omitzero"`
	EncryptedContent string         `json:"encrypted_content,omitempty"`
	Signature        string         `json:"signature,omitempty"`
	ProviderData     map[string]any `json:"provider_data,omitempty"`
}

// fields takes a provider object apart: each take removes what a typed field
// will carry, so what is left at the end is what has no field of its own.
type fields struct {
	t    testing.TB
	what string
	m    map[string]any
}

func newFields(t testing.TB, what string, v any) *fields {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: %v is not an object", what, v)
	}
	return &fields{t: t, what: what, m: maps.Clone(m)}
}

func (f *fields) take(key string) (any, bool) {
	v, ok := f.m[key]
	delete(f.m, key)
	return v, ok
}

func (f *fields) mustTake(key string) any {
	f.t.Helper()
	v, ok := f.take(key)
	if !ok {
		f.t.Fatalf("%s has no %s", f.what, key)
	}
	return v
}

func (f *fields) str(key string) (string, bool) {
	f.t.Helper()
	v, ok := f.take(key)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		f.t.Fatalf("%s.%s = %v, not a string", f.what, key, v)
	}
	return s, true
}

func (f *fields) mustStr(key string) string {
	f.t.Helper()
	s, ok := f.str(key)
	if !ok {
		f.t.Fatalf("%s has no %s", f.what, key)
	}
	return s
}

// rest is what no typed field took, nil when nothing is left.
func (f *fields) rest() map[string]any {
	if len(f.m) == 0 {
		return nil
	}
	return f.m
}

// none fails on anything left: an object with nowhere to keep its leftovers
// must have none, or the mapping would drop them.
func (f *fields) none() {
	f.t.Helper()
	if len(f.m) > 0 {
		f.t.Fatalf("%s: no place in Logbook for %v", f.what, f.m)
	}
}

// builder puts a provider object back together over what was kept aside. A
// kept key that a typed field also sets would be two answers to one question,
// so it fails rather than picking one.
type builder struct {
	t testing.TB
	m map[string]any
}

func build(t testing.TB, kept map[string]any) *builder {
	m := maps.Clone(kept)
	if m == nil {
		m = map[string]any{}
	}
	return &builder{t: t, m: m}
}

func (b *builder) set(key string, v any) *builder {
	b.t.Helper()
	if old, dup := b.m[key]; dup {
		b.t.Fatalf("%s is both kept aside (%v) and in a typed field (%v)", key, old, v)
	}
	b.m[key] = v
	return b
}

func list(t testing.TB, what string, v any) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: %v is not an array", what, v)
	}
	return l
}

func ptr(s string) *string { return &s }

// logbookFile is the Logbook copy of a file the provider knows by providerID:
// a part's file_id must name a Logbook file, so the runtime uploads the bytes
// to both and keeps the provider's id beside Logbook's, in provider_data.
func logbookFile(t testing.TB, files map[string]string, providerID string) string {
	t.Helper()
	id, ok := files[providerID]
	if !ok {
		t.Fatalf("no Logbook copy of the provider's file %s", providerID)
	}
	return id
}

// --- OpenAI Responses ---

// openAIIn maps one Responses item to the message a runtime appends: items and
// messages are one to one, so the item's order is the session's.
func openAIIn(t testing.TB, raw any, files map[string]string) lbMessage {
	t.Helper()
	f := newFields(t, "item", raw)
	var m lbMessage
	switch typ := f.mustStr("type"); typ {
	case "message":
		m.Role = f.mustStr("role")
		m.Content = openAIContentIn(t, f.mustTake("content"), m.Role, files)
	case "reasoning":
		m.Role = "assistant"
		// summary is always there, empty or not: [] is kept as [], which is
		// all a stored (store=true) reasoning item without content has.
		p := lbPart{Type: model.PartReasoning, Summary: []string{}}
		for _, s := range list(t, "summary", f.mustTake("summary")) {
			sf := newFields(t, "summary item", s)
			if typ := sf.mustStr("type"); typ != "summary_text" {
				t.Fatalf("summary item of type %q", typ)
			}
			p.Summary = append(p.Summary, sf.mustStr("text"))
			sf.none()
		}
		p.EncryptedContent, _ = f.str("encrypted_content")
		if c, ok := f.take("content"); ok {
			// A reasoning part has one text; several reasoning_text entries
			// would have to be joined, and could not be split again.
			l := list(t, "reasoning content", c)
			if len(l) != 1 {
				t.Fatalf("reasoning content of %d entries: a reasoning part holds one text", len(l))
			}
			cf := newFields(t, "reasoning content", l[0])
			if typ := cf.mustStr("type"); typ != "reasoning_text" {
				t.Fatalf("reasoning content of type %q", typ)
			}
			p.Text = ptr(cf.mustStr("text"))
			cf.none()
		}
		m.Content.Parts = []lbPart{p}
	case "function_call":
		m.Role = "assistant"
		m.ToolCalls = []lbToolCall{{ID: f.mustStr("call_id"), Name: f.mustStr("name"), Arguments: f.mustStr("arguments")}}
	case "function_call_output":
		m.Role = "tool"
		m.ToolCallID = f.mustStr("call_id")
		m.Content = openAIContentIn(t, f.mustTake("output"), m.Role, files)
	default:
		t.Fatalf("no mapping for a %s item", typ)
	}
	m.ProviderItem = f.rest()
	return m
}

func openAIContentIn(t testing.TB, v any, role string, files map[string]string) lbContent {
	t.Helper()
	if s, ok := v.(string); ok {
		return lbContent{Text: s}
	}
	parts := []lbPart{}
	for _, p := range list(t, "content", v) {
		parts = append(parts, openAIPartIn(t, p, role, files))
	}
	return lbContent{Parts: parts}
}

func openAIPartIn(t testing.TB, raw any, role string, files map[string]string) lbPart {
	t.Helper()
	f := newFields(t, "content part", raw)
	var p lbPart
	switch typ := f.mustStr("type"); typ {
	case "input_text", "output_text":
		// Which of the two it was is the role's to say on the way out.
		if (typ == "output_text") != (role == "assistant") {
			t.Fatalf("%s in a %s message would not come back as itself", typ, role)
		}
		p = lbPart{Type: model.PartText, Text: ptr(f.mustStr("text"))}
		p.Annotations, _ = f.take("annotations")
	case "refusal":
		p = lbPart{Type: model.PartRefusal, Text: ptr(f.mustStr("refusal"))}
	case "input_image":
		p.Type = model.PartImage
		p.URL, _ = f.str("image_url")
		p.Detail, _ = f.str("detail")
	case "input_file":
		p.Type = model.PartFile
		data, isData := f.str("file_data")
		u, isURL := f.str("file_url")
		switch {
		case isData && isURL:
			t.Fatalf("input_file with both file_data and file_url")
		case isData && !strings.HasPrefix(data, "data:"):
			t.Fatalf("file_data is not a data: URL: its media type would be lost")
		case isData:
			p.URL = data
		case isURL:
			p.URL = u
		}
		p.Filename, _ = f.str("filename")
	default:
		t.Fatalf("no mapping for a %s content part", typ)
	}
	if id, ok := f.m["file_id"].(string); ok {
		p.FileID = logbookFile(t, files, id) // the provider's id stays in provider_data
	}
	p.ProviderData = f.rest()
	return p
}

// openAIOut maps a stored message back to the item it came from.
func openAIOut(t testing.TB, m lbMessage) map[string]any {
	t.Helper()
	b := build(t, m.ProviderItem)
	switch {
	case m.Role == "tool":
		b.set("type", "function_call_output").set("call_id", m.ToolCallID).set("output", openAIContentOut(t, m.Content, m.Role))
	case len(m.ToolCalls) > 0:
		if len(m.ToolCalls) != 1 || m.Content.Parts != nil || m.Content.Text != "" {
			t.Fatalf("message %s: a function_call item is one call and nothing else", m.ID)
		}
		c := m.ToolCalls[0]
		b.set("type", "function_call").set("call_id", c.ID).set("name", c.Name).set("arguments", c.Arguments)
	case len(m.Content.Parts) == 1 && m.Content.Parts[0].Type == model.PartReasoning:
		p := m.Content.Parts[0]
		if p.Signature != "" || p.ProviderData != nil {
			t.Fatalf("message %s: a reasoning item has no signature or other fields", m.ID)
		}
		summary := []any{} // OpenAI requires the field, empty or not
		for _, s := range p.Summary {
			summary = append(summary, map[string]any{"type": "summary_text", "text": s})
		}
		b.set("type", "reasoning").set("summary", summary)
		if p.EncryptedContent != "" {
			b.set("encrypted_content", p.EncryptedContent)
		}
		if p.Text != nil {
			b.set("content", []any{map[string]any{"type": "reasoning_text", "text": *p.Text}})
		}
	default:
		b.set("type", "message").set("role", m.Role).set("content", openAIContentOut(t, m.Content, m.Role))
	}
	return b.m
}

func openAIContentOut(t testing.TB, c lbContent, role string) any {
	t.Helper()
	if c.Parts == nil {
		return c.Text
	}
	out := []any{}
	for _, p := range c.Parts {
		out = append(out, openAIPartOut(t, p, role))
	}
	return out
}

func openAIPartOut(t testing.TB, p lbPart, role string) map[string]any {
	t.Helper()
	b := build(t, p.ProviderData)
	switch p.Type {
	case model.PartText:
		typ := "input_text"
		if role == "assistant" {
			typ = "output_text"
		}
		b.set("type", typ).set("text", *p.Text)
		if p.Annotations != nil {
			b.set("annotations", p.Annotations)
		}
	case model.PartRefusal:
		b.set("type", "refusal").set("refusal", *p.Text)
	case model.PartImage:
		b.set("type", "input_image")
		if p.URL != "" {
			b.set("image_url", p.URL)
		}
		if p.Detail != "" {
			b.set("detail", p.Detail)
		}
	case model.PartFile:
		b.set("type", "input_file")
		switch {
		case strings.HasPrefix(p.URL, "data:"):
			b.set("file_data", p.URL)
		case p.URL != "":
			b.set("file_url", p.URL)
		}
		if p.Filename != "" {
			b.set("filename", p.Filename)
		}
	default:
		t.Fatalf("no Responses content part for a %s part", p.Type)
	}
	if p.FileID != "" && b.m["file_id"] == nil {
		t.Fatalf("part names Logbook's %s and no file of the provider's", p.FileID)
	}
	return b.m
}

// --- Anthropic Messages ---

// anthropicIn maps a Messages request's history to what a runtime appends, one
// batch per Anthropic message: a user message's tool_result blocks each become
// a tool message, and the batch keeps them together.
func anthropicIn(t testing.TB, raw any, files map[string]string) [][]lbMessage {
	t.Helper()
	f := newFields(t, "request", raw)
	var out [][]lbMessage
	if sys, ok := f.take("system"); ok {
		out = append(out, []lbMessage{{Role: "system", Content: anthropicContentIn(t, sys, files)}})
	}
	for _, msg := range list(t, "messages", f.mustTake("messages")) {
		out = append(out, anthropicMessageIn(t, msg, files))
	}
	f.none()
	return out
}

func anthropicMessageIn(t testing.TB, raw any, files map[string]string) []lbMessage {
	t.Helper()
	f := newFields(t, "message", raw)
	role := f.mustStr("role")
	content := f.mustTake("content")
	f.none()
	if s, ok := content.(string); ok {
		return []lbMessage{{Role: role, Content: lbContent{Text: s}}}
	}
	var out []lbMessage
	var cur *lbMessage
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for _, block := range list(t, "content", content) {
		typ, _ := newFields(t, "block", block).m["type"].(string)
		switch {
		case typ == "tool_result" && role == "user":
			flush()
			out = append(out, anthropicToolResultIn(t, block, files))
		case typ == "tool_use" && role == "assistant":
			if cur == nil {
				cur = &lbMessage{Role: role, Content: lbContent{Parts: []lbPart{}}}
			}
			cur.ToolCalls = append(cur.ToolCalls, anthropicToolUseIn(t, block))
		default:
			// Tool calls sit beside a message's content, not among its parts: a
			// block after a tool_use starts another message, which keeps the order.
			if cur != nil && len(cur.ToolCalls) > 0 {
				flush()
			}
			if cur == nil {
				cur = &lbMessage{Role: role, Content: lbContent{Parts: []lbPart{}}}
			}
			cur.Content.Parts = append(cur.Content.Parts, anthropicBlockIn(t, block, files))
		}
	}
	flush()
	return out
}

func anthropicToolUseIn(t testing.TB, raw any) lbToolCall {
	t.Helper()
	f := newFields(t, "tool_use", raw)
	f.mustStr("type")
	c := lbToolCall{ID: f.mustStr("id"), Name: f.mustStr("name")}
	args, err := json.Marshal(f.mustTake("input"))
	if err != nil {
		t.Fatalf("tool_use input: %v", err)
	}
	c.Arguments = string(args)
	c.ProviderData = f.rest() // cache_control and whatever else the block had
	return c
}

func anthropicToolResultIn(t testing.TB, raw any, files map[string]string) lbMessage {
	t.Helper()
	f := newFields(t, "tool_result", raw)
	f.mustStr("type")
	m := lbMessage{Role: "tool", ToolCallID: f.mustStr("tool_use_id")}
	// Logbook's content is never absent: a result without one would come back
	// with "" and is not in the fixtures.
	m.Content = anthropicContentIn(t, f.mustTake("content"), files)
	if isErr, _ := f.m["is_error"].(bool); isErr {
		f.take("is_error") // an explicit false has no typed field to tell it from absence, so it stays kept
		m.IsError = true
	}
	m.ProviderItem = f.rest()
	return m
}

func anthropicContentIn(t testing.TB, v any, files map[string]string) lbContent {
	t.Helper()
	if s, ok := v.(string); ok {
		return lbContent{Text: s}
	}
	parts := []lbPart{}
	for _, b := range list(t, "content", v) {
		parts = append(parts, anthropicBlockIn(t, b, files))
	}
	return lbContent{Parts: parts}
}

func anthropicBlockIn(t testing.TB, raw any, files map[string]string) lbPart {
	t.Helper()
	f := newFields(t, "block", raw)
	var p lbPart
	switch typ := f.mustStr("type"); typ {
	case "text":
		p = lbPart{Type: model.PartText, Text: ptr(f.mustStr("text"))}
		p.Annotations, _ = f.take("citations")
	case "image", "document":
		p.Type = model.PartImage
		if typ == "document" {
			p.Type = model.PartFile
		}
		anthropicSourceIn(t, &p, f.mustTake("source"), files)
	case "thinking":
		p = lbPart{Type: model.PartReasoning, Text: ptr(f.mustStr("thinking"))}
		p.Signature, _ = f.str("signature")
	case "redacted_thinking":
		p = lbPart{Type: model.PartReasoning, EncryptedContent: f.mustStr("data")}
	default:
		t.Fatalf("no mapping for a %s block", typ)
	}
	for k, v := range f.rest() {
		if p.ProviderData == nil {
			p.ProviderData = map[string]any{}
		}
		if _, dup := p.ProviderData[k]; dup {
			t.Fatalf("block field %s collides with its source's", k)
		}
		p.ProviderData[k] = v
	}
	return p
}

// anthropicSourceIn puts a source where a part keeps it: base64 and plain text
// become data: URLs (;base64 tells them apart again), a provider file the
// Logbook copy's file_id.
func anthropicSourceIn(t testing.TB, p *lbPart, raw any, files map[string]string) {
	t.Helper()
	f := newFields(t, "source", raw)
	switch typ := f.mustStr("type"); typ {
	case "base64":
		p.MediaType = f.mustStr("media_type")
		p.URL = "data:" + p.MediaType + ";base64," + f.mustStr("data")
	case "text":
		p.MediaType = f.mustStr("media_type")
		p.URL = "data:" + p.MediaType + "," + url.PathEscape(f.mustStr("data"))
	case "url":
		p.URL = f.mustStr("url")
	case "file":
		id := f.mustStr("file_id")
		p.FileID = logbookFile(t, files, id)
		p.ProviderData = map[string]any{"file_id": id}
	default:
		t.Fatalf("no mapping for a %s source", typ)
	}
	f.none()
}

// anthropicOut maps a session's messages back to the request's history.
// Consecutive messages that map to one Anthropic role are one Anthropic
// message, as the API itself treats them: that undoes the split of a user
// message into tool results and the rest.
func anthropicOut(t testing.TB, msgs []lbMessage) map[string]any {
	t.Helper()
	req := map[string]any{}
	if len(msgs) > 0 && msgs[0].Role == "system" {
		req["system"] = anthropicContentOut(t, msgs[0].Content)
		msgs = msgs[1:]
	}
	out := []any{}
	var last map[string]any
	for _, m := range msgs {
		role := m.Role
		if role == "tool" {
			role = "user"
		}
		if role != "user" && role != "assistant" {
			t.Fatalf("message %s: no Anthropic message for role %s", m.ID, m.Role)
		}
		content := anthropicBlocksOut(t, m)
		if last != nil && last["role"] == role {
			prev, ok1 := last["content"].([]any)
			more, ok2 := content.([]any)
			if !ok1 || !ok2 {
				t.Fatalf("message %s: string content cannot join the message before it", m.ID)
			}
			last["content"] = append(prev, more...)
			continue
		}
		last = map[string]any{"role": role, "content": content}
		out = append(out, last)
	}
	req["messages"] = out
	return req
}

func anthropicBlocksOut(t testing.TB, m lbMessage) any {
	t.Helper()
	if m.Role == "tool" {
		b := build(t, m.ProviderItem).set("type", "tool_result").set("tool_use_id", m.ToolCallID).
			set("content", anthropicContentOut(t, m.Content))
		if m.IsError {
			b.set("is_error", true)
		}
		return []any{b.m}
	}
	if m.ProviderItem != nil {
		t.Fatalf("message %s: an Anthropic message has no fields to keep: %v", m.ID, m.ProviderItem)
	}
	if len(m.ToolCalls) == 0 {
		return anthropicContentOut(t, m.Content)
	}
	if m.Content.Parts == nil {
		t.Fatalf("message %s: tool_use blocks with string content", m.ID)
	}
	blocks := anthropicContentOut(t, m.Content).([]any)
	for _, c := range m.ToolCalls {
		var input map[string]any
		if err := json.Unmarshal([]byte(c.Arguments), &input); err != nil || input == nil {
			t.Fatalf("tool call %s: arguments %q are not an object: %v", c.ID, c.Arguments, err)
		}
		blocks = append(blocks, build(t, c.ProviderData).set("type", "tool_use").set("id", c.ID).set("name", c.Name).set("input", input).m)
	}
	return blocks
}

func anthropicContentOut(t testing.TB, c lbContent) any {
	t.Helper()
	if c.Parts == nil {
		return c.Text
	}
	out := []any{}
	for _, p := range c.Parts {
		out = append(out, anthropicBlockOut(t, p))
	}
	return out
}

func anthropicBlockOut(t testing.TB, p lbPart) map[string]any {
	t.Helper()
	kept := maps.Clone(p.ProviderData)
	providerFile, _ := kept["file_id"].(string)
	delete(kept, "file_id") // it goes back into the source
	b := build(t, kept)
	switch p.Type {
	case model.PartText:
		b.set("type", "text").set("text", *p.Text)
		if p.Annotations != nil {
			b.set("citations", p.Annotations)
		}
	case model.PartImage, model.PartFile:
		typ := "image"
		if p.Type == model.PartFile {
			typ = "document"
		}
		b.set("type", typ).set("source", anthropicSourceOut(t, p, providerFile))
	case model.PartReasoning:
		if p.Summary != nil {
			t.Fatalf("Anthropic has no reasoning summaries")
		}
		if p.Text == nil {
			b.set("type", "redacted_thinking").set("data", p.EncryptedContent)
			break
		}
		if p.EncryptedContent != "" {
			t.Fatalf("thinking with encrypted content")
		}
		b.set("type", "thinking").set("thinking", *p.Text)
		if p.Signature != "" {
			b.set("signature", p.Signature)
		}
	default:
		t.Fatalf("no Anthropic block for a %s part", p.Type)
	}
	return b.m
}

func anthropicSourceOut(t testing.TB, p lbPart, providerFile string) map[string]any {
	t.Helper()
	switch {
	case providerFile != "":
		return map[string]any{"type": "file", "file_id": providerFile}
	case p.FileID != "":
		t.Fatalf("part names Logbook's %s and no file of the provider's", p.FileID)
	case strings.HasPrefix(p.URL, "data:"):
		header, data, ok := strings.Cut(strings.TrimPrefix(p.URL, "data:"), ",")
		if !ok {
			t.Fatalf("data: URL without a comma")
		}
		if mt, isB64 := strings.CutSuffix(header, ";base64"); isB64 {
			if mt != p.MediaType {
				t.Fatalf("data: URL of %s in a part of %s", mt, p.MediaType)
			}
			return map[string]any{"type": "base64", "media_type": mt, "data": data}
		}
		text, err := url.PathUnescape(data)
		if err != nil || header != p.MediaType {
			t.Fatalf("text source %q of %s: %v", p.URL, p.MediaType, err)
		}
		return map[string]any{"type": "text", "media_type": header, "data": text}
	}
	return map[string]any{"type": "url", "url": p.URL}
}

// --- the round trip ---

// interopEnv is what a runtime has uploaded: small real files, stored in
// Logbook, and the ids the providers gave their copies.
type interopEnv struct {
	png, pdf       model.File
	pngB64, pdfB64 string
	files          map[string]string // provider file id → Logbook file id
}

func newInteropEnv(t *testing.T, c *client) interopEnv {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 0x1f, G: 0x6f, B: 0xb4, A: 0xff}) // azulejo blue
	var pngBytes bytes.Buffer
	if err := png.Encode(&pngBytes, img); err != nil {
		t.Fatal(err)
	}
	pdfBytes := tinyPDF("Booking TP 1351. Check-in from 15:00, check-out until 11:00.")
	env := interopEnv{
		png:    mustUpload(t, c, "image/png", pngBytes.Bytes()),
		pdf:    mustUpload(t, c, "application/pdf", pdfBytes),
		pngB64: base64.StdEncoding.EncodeToString(pngBytes.Bytes()),
		pdfB64: base64.StdEncoding.EncodeToString(pdfBytes),
	}
	env.files = map[string]string{
		"file-6F2ksmvXxt4VdoqmHRw6kL":   env.png.ID, // OpenAI Files API
		"file-Qm3vT8cLk2XwR9bN4pY7hD":   env.pdf.ID,
		"file_011CNha8iCJcU1wXNR6q4V8w": env.png.ID, // Anthropic Files API
	}
	return env
}

// tinyPDF is a one-page PDF that readers open: its xref offsets are real.
func tinyPDF(text string) []byte {
	stream := "BT /F1 12 Tf 20 100 Td (" + text + ") Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 420 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func (env interopEnv) expand(s string) string {
	return strings.NewReplacer("{{PNG_BASE64}}", env.pngB64, "{{PDF_BASE64}}", env.pdfB64).Replace(s)
}

func loadInteropFixture(t *testing.T, name string, env interopEnv) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "interop", name))
	if err != nil {
		t.Fatal(err)
	}
	text := env.expand(string(b))
	if i := strings.Index(text, "{{"); i >= 0 {
		t.Fatalf("%s: placeholder left at %q", name, text[i:min(len(text), i+40)])
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// at reads fixture values by path (object keys and array indexes).
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, step := range path {
		switch k := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %v is not an object", path, v)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("at %v: no %s", path, k)
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: no element %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

// asJSON is v as decoded JSON, so that comparisons ignore key order and Go types.
func asJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return out
}

func sameJSON(t testing.TB, got, want any) (bool, string) {
	t.Helper()
	g, w := asJSON(t, got), asJSON(t, want)
	if reflect.DeepEqual(g, w) {
		return true, ""
	}
	// Name the first element that differs: whole histories are long.
	where := ""
	gl, ok1 := g.([]any)
	wl, ok2 := w.([]any)
	if ok1 && ok2 {
		for i := range min(len(gl), len(wl)) {
			if !reflect.DeepEqual(gl[i], wl[i]) {
				g, w, where = gl[i], wl[i], fmt.Sprintf(" (first difference at [%d])", i)
				break
			}
		}
	}
	gb, _ := json.MarshalIndent(g, "", "  ")
	wb, _ := json.MarshalIndent(w, "", "  ")
	return false, fmt.Sprintf("%s\ngot:  %s\nwant: %s", where, gb, wb)
}

func requireSameJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	if ok, diff := sameJSON(t, got, want); !ok {
		t.Fatalf("%s differs%s", what, diff)
	}
}

type typedCheck struct {
	name      string
	got, want any
}

func checkTyped(t *testing.T, checks []typedCheck) {
	t.Helper()
	for _, c := range checks {
		if ok, diff := sameJSON(t, c.got, c.want); !ok {
			t.Errorf("%s%s", c.name, diff)
		}
	}
}

// withoutID is m as it was appended: the id is the server's.
func withoutID(m lbMessage) lbMessage {
	m.ID = ""
	return m
}

func readHistory(t *testing.T, c *client, sessionID string) []lbMessage {
	t.Helper()
	return listAll[lbMessage](t, c, "/v1/sessions/"+sessionID+"/messages", 7)
}

// contentKeys are provider fields that carry content. Each has a typed field;
// one found in provider_item or provider_data would be content hidden from
// search and from other providers' adapters.
var contentKeys = []string{"text", "content", "summary", "encrypted_content", "thinking", "signature", "data",
	"source", "refusal", "arguments", "input", "output", "image_url", "file_data", "file_url", "annotations",
	"role", "call_id", "tool_use_id", "name", "filename", "detail", "media_type"}

func checkNoContentKept(t *testing.T, msgs []lbMessage) {
	t.Helper()
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if slices.Contains(contentKeys, k) {
					t.Errorf("%s holds %s: content kept outside the typed fields", where, k)
				}
				walk(where+"."+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", where, i), x)
			}
		}
	}
	for i, m := range msgs {
		walk(fmt.Sprintf("messages[%d].provider_item", i), asJSON(t, m.ProviderItem))
		for j, p := range m.Content.Parts {
			walk(fmt.Sprintf("messages[%d].content[%d].provider_data", i, j), asJSON(t, p.ProviderData))
		}
	}
}

// firstWord is the first word search would see in s, were s indexed.
func firstWord(s string) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func searchSession(t *testing.T, c *client, sessionID, q string) []model.MessageHit {
	t.Helper()
	var r model.SearchResult[model.MessageHit]
	c.do("GET", "/v1/messages/search?session_id="+url.QueryEscape(sessionID)+"&q="+url.QueryEscape(q), nil).
		want(t, http.StatusOK, &r)
	return r.Data
}

func TestInteropRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		in            func(t testing.TB, fixture any, files map[string]string) [][]lbMessage
		out           func(t testing.TB, msgs []lbMessage) any
		typed         func(t *testing.T, fx any, msgs []lbMessage, env interopEnv) []typedCheck
		// found maps a word to the message (by index) search must find it in;
		// hidden are words that occur only in opaque payloads, base64 or URLs
		// (placeholders expanded, then their first word).
		found  map[string]int
		hidden []string
	}{
		{
			name:    "OpenAI Responses items",
			fixture: "openai_agents_run.json",
			in: func(t testing.TB, fx any, files map[string]string) [][]lbMessage {
				var batches [][]lbMessage
				for _, item := range list(t, "items", fx) {
					batches = append(batches, []lbMessage{openAIIn(t, item, files)})
				}
				return batches
			},
			out: func(t testing.TB, msgs []lbMessage) any {
				items := []any{}
				for _, m := range msgs {
					items = append(items, openAIOut(t, m))
				}
				return items
			},
			typed:  openAITypedChecks,
			found:  map[string]int{"azulejo": 1, "funicular": 2, "Gulbenkian": 11, "consent": 15},
			hidden: []string{"gAAAAABoos3gUvImZaYMEtKJGF2VDuiBNgkWb2sRPReNbA", "{{PNG_BASE64}}", "{{PDF_BASE64}}"},
		},
		{
			name:    "Anthropic Messages blocks",
			fixture: "anthropic_messages.json",
			in:      anthropicIn,
			out: func(t testing.TB, msgs []lbMessage) any {
				return anthropicOut(t, msgs)
			},
			typed:  anthropicTypedChecks,
			found:  map[string]int{"meticulous": 0, "boarding": 1, "Radar": 4, "taxi": 7},
			hidden: []string{"EqQBCkgIBxABGAIiQLzDDo6Xn5Jk5mRbNtJYpq1sNvE3bY2yFv9Kc0Wd8xR1eT4uI7oP3aS6dF9gH2jK5lZ8xC1vB4nM7qW0eR3tY6EgzWb3v5Nq9Lt1Yh0sUaDPx4mR8kT2wZ6vJ1nC3iMKpQ", "EmwKAhgBEgy3va3pzix", "{{PNG_BASE64}}", "{{PDF_BASE64}}"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t)
			env := newInteropEnv(t, c)
			fx := loadInteropFixture(t, tc.fixture, env)
			ses := mustCreateSession(t, c, nil)
			var sent []lbMessage
			for _, batch := range tc.in(t, fx, env.files) {
				if len(batch) == 1 {
					mustAppend(t, c, ses.ID, batch[0])
				} else {
					c.do("POST", "/v1/sessions/"+ses.ID+"/messages", map[string]any{"messages": batch}).
						want(t, http.StatusCreated, nil)
				}
				sent = append(sent, batch...)
			}

			got := readHistory(t, c, ses.ID)
			stored := make([]lbMessage, len(got))
			for i, m := range got {
				stored[i] = withoutID(m)
			}
			requireSameJSON(t, "the history as stored", stored, sent)
			checkTyped(t, tc.typed(t, fx, got, env))
			checkNoContentKept(t, got)
			requireSameJSON(t, "the history mapped back", tc.out(t, got), fx)

			imported := mustImport(t, c, mustExport(t, c, ses.ID), "?as_new=true")
			again := readHistory(t, c, imported.ID)
			requireSameJSON(t, "the imported history mapped back", tc.out(t, again), fx)

			var hidden []string
			for _, h := range tc.hidden {
				word := firstWord(env.expand(h))
				if len(word) < 8 {
					t.Fatalf("hidden word %q of %q is too short to mean anything", word, h)
				}
				hidden = append(hidden, word)
			}
			// Search finds these words in text: their absence below is their
			// payloads' not being indexed, not the words' being unsearchable.
			control := mustCreateSession(t, c, nil)
			mustAppend(t, c, control.ID, map[string]any{"role": "user", "content": strings.Join(hidden, " ")})
			waitIndexed(t, c)
			for _, word := range hidden {
				if hits := searchSession(t, c, control.ID, word); len(hits) != 1 {
					t.Fatalf("search %q in plain text: %d hits, want 1", word, len(hits))
				}
			}
			for _, s := range []struct {
				id   string
				msgs []lbMessage
			}{{ses.ID, got}, {imported.ID, again}} {
				for word, i := range tc.found {
					hits := searchSession(t, c, s.id, word)
					if !slices.ContainsFunc(hits, func(h model.MessageHit) bool { return h.MessageID == s.msgs[i].ID }) {
						t.Errorf("session %s: search %q found %+v, not message %d (%s)", s.id, word, hits, i, s.msgs[i].ID)
					}
				}
				for _, word := range hidden {
					if hits := searchSession(t, c, s.id, word); len(hits) != 0 {
						t.Errorf("session %s: search %q found %+v: an opaque payload was indexed", s.id, word, hits)
					}
				}
			}
		})
	}
}

// openAITypedChecks: messages are the items one to one, so indexes are shared.
func openAITypedChecks(t *testing.T, fx any, msgs []lbMessage, env interopEnv) []typedCheck {
	return []typedCheck{
		{"image by a provider file: Logbook's copy typed, the provider's id kept",
			msgs[1].Content.Parts[1], map[string]any{"type": "image", "file_id": env.png.ID, "detail": "high",
				"provider_data": map[string]any{"file_id": "file-6F2ksmvXxt4VdoqmHRw6kL"}}},
		{"image as base64", msgs[1].Content.Parts[2],
			map[string]any{"type": "image", "url": "data:image/png;base64," + env.pngB64, "detail": "low"}},
		{"file as base64", msgs[1].Content.Parts[3],
			map[string]any{"type": "file", "url": "data:application/pdf;base64," + env.pdfB64, "filename": "itinerary.pdf"}},
		{"reasoning summary", msgs[2].Content.Parts[0].Summary,
			[]any{at(t, fx, 2, "summary", 0, "text"), at(t, fx, 2, "summary", 1, "text")}},
		{"reasoning encrypted_content", msgs[2].Content.Parts[0].EncryptedContent, at(t, fx, 2, "encrypted_content")},
		{"reasoning item id", msgs[2].ProviderItem, map[string]any{"id": at(t, fx, 2, "id")}},
		{"reasoning text", msgs[9].Content.Parts[0].Text, at(t, fx, 9, "content", 0, "text")},
		{"function call", withoutID(msgs[3]), map[string]any{"role": "assistant", "content": "",
			"tool_calls":    []any{map[string]any{"id": at(t, fx, 3, "call_id"), "name": "get_flight_status", "arguments": at(t, fx, 3, "arguments")}},
			"provider_item": map[string]any{"id": at(t, fx, 3, "id"), "status": "completed"}}},
		{"function call output", withoutID(msgs[6]), map[string]any{"role": "tool", "tool_call_id": at(t, fx, 6, "call_id"),
			"content": at(t, fx, 6, "output")}},
		{"output_text annotations", msgs[7].Content.Parts[0].Annotations, at(t, fx, 7, "content", 0, "annotations")},
		{"output_text leftovers", msgs[7].Content.Parts[0].ProviderData, map[string]any{"logprobs": []any{}}},
		{"assistant message leftovers", msgs[7].ProviderItem, map[string]any{"id": at(t, fx, 7, "id"), "status": "completed"}},
		{"file by a provider file", msgs[13].Content.Parts[1], map[string]any{"type": "file", "file_id": env.pdf.ID,
			"filename": "passport-scan.pdf", "provider_data": map[string]any{"file_id": "file-Qm3vT8cLk2XwR9bN4pY7hD"}}},
		{"refusal", msgs[15].Content.Parts, []any{map[string]any{"type": "refusal", "text": at(t, fx, 15, "content", 0, "refusal")}}},
	}
}

// anthropicTypedChecks: the system prompt is message 0; the first user message
// 1; the assistant's tool calls 2; their results 3 and 4, the user's text after
// them 5; the cited answer 6; the user's last message 7.
func anthropicTypedChecks(t *testing.T, fx any, msgs []lbMessage, env interopEnv) []typedCheck {
	user0 := func(i int, key string) any { return at(t, fx, "messages", 0, "content", i, key) }
	asst1 := func(i int, key string) any { return at(t, fx, "messages", 1, "content", i, key) }
	var weatherArgs any
	if err := json.Unmarshal([]byte(msgs[2].ToolCalls[1].Arguments), &weatherArgs); err != nil {
		t.Fatal(err)
	}
	return []typedCheck{
		{"system prompt", msgs[0].Content.Parts, []any{map[string]any{"type": "text", "text": at(t, fx, "system", 0, "text"),
			"provider_data": map[string]any{"cache_control": map[string]any{"type": "ephemeral"}}}}},
		{"image as base64", msgs[1].Content.Parts[0],
			map[string]any{"type": "image", "url": "data:image/png;base64," + env.pngB64, "media_type": "image/png"}},
		{"PDF document", msgs[1].Content.Parts[1], map[string]any{"type": "file",
			"url": "data:application/pdf;base64," + env.pdfB64, "media_type": "application/pdf",
			"provider_data": map[string]any{"title": user0(1, "title"), "context": user0(1, "context"),
				"citations": user0(1, "citations"), "cache_control": user0(1, "cache_control")}}},
		{"plain text document", msgs[1].Content.Parts[2].MediaType, "text/plain"},
		{"thinking", msgs[2].Content.Parts[0],
			map[string]any{"type": "reasoning", "text": asst1(0, "thinking"), "signature": asst1(0, "signature")}},
		{"redacted thinking", msgs[2].Content.Parts[1],
			map[string]any{"type": "reasoning", "encrypted_content": asst1(1, "data")}},
		{"tool calls", []any{msgs[2].ToolCalls[0].ID, msgs[2].ToolCalls[1].ID, msgs[2].ToolCalls[1].Name},
			[]any{asst1(3, "id"), asst1(4, "id"), asst1(4, "name")}},
		{"tool call input", weatherArgs, asst1(4, "input")},
		{"tool error", withoutID(msgs[3]), map[string]any{"role": "tool", "tool_call_id": asst1(3, "id"), "is_error": true,
			"content": "FlightStatusError: upstream timeout after 10s"}},
		{"tool result leftovers", msgs[4].ProviderItem,
			map[string]any{"is_error": false, "cache_control": map[string]any{"type": "ephemeral"}}},
		{"image by a provider file", msgs[4].Content.Parts[3], map[string]any{"type": "image", "file_id": env.png.ID,
			"provider_data": map[string]any{"file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}}},
		{"text after tool results", withoutID(msgs[5]), map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "text", "text": at(t, fx, "messages", 2, "content", 2, "text")}}}},
		{"citations", msgs[6].Content.Parts[1].Annotations, at(t, fx, "messages", 3, "content", 1, "citations")},
	}
}

// A stored OpenAI reasoning item without content ({"id":"rs_…","type":
// "reasoning","summary":[]}) is a reasoning part whose only field is an empty
// summary: it is kept as sent, [] and all, and its export imports.
func TestInteropContentlessReasoning(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	var m model.Message
	c.do("POST", "/v1/sessions/"+s.ID+"/messages",
		`{"role":"assistant","content":[{"type":"reasoning","summary":[]}],"provider_item":{"id":"rs_1"}}`).
		want(t, http.StatusCreated, &m)
	if m.Content.Parts[0].Summary == nil {
		t.Fatalf("the empty summary was dropped: %s", mustJSON(t, m.Content))
	}
	imported := mustImport(t, c, mustExport(t, c, s.ID), "?as_new=true")
	requireSameJSON(t, "the imported content", readHistory(t, c, imported.ID)[0].Content, readHistory(t, c, s.ID)[0].Content)
}

// Parallel calls in one assistant message keep what each provider call had
// beyond id, name and arguments (OpenAI's fc_… item id and status, Anthropic's
// cache_control), on every read and through export and import.
func TestToolCallProviderData(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	calls := []map[string]any{
		{"id": "call_1", "name": "get_weather", "arguments": `{"city":"Lisbon"}`,
			"provider_data": map[string]any{"id": "fc_68a1", "status": "completed"}},
		{"id": "toolu_01", "name": "get_time", "arguments": `{}`,
			"provider_data": map[string]any{"cache_control": map[string]any{"type": "ephemeral"}}},
		{"id": "call_3", "name": "noop", "arguments": `{}`},
	}
	mustAppend(t, c, s.ID, map[string]any{"role": "assistant", "content": "", "tool_calls": calls})
	imported := mustImport(t, c, mustExport(t, c, s.ID), "?as_new=true")
	for _, id := range []string{s.ID, imported.ID} {
		requireSameJSON(t, "tool_calls of "+id, readHistory(t, c, id)[0].ToolCalls, calls)
	}
	c.do("POST", "/v1/sessions/"+s.ID+"/messages", map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{
		{"id": "c", "name": "f", "arguments": "{}", "provider_data": []any{1}}}}).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
}
