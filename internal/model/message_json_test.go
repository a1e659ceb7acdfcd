package model

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// The hand-written encoder writes exactly what encoding/json writes, on messages
// built to hold every kind of character and number that needs care.
func TestMessageJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"", "a", "héllo", "<b>&amp;</b>", "\"q\"", `back\slash`, "\n\r\t\b\f\x00\x1f\x7f", "\u2028\u2029",
		"日本語", "🫖", "\xff\xfe", "e\u0301", "{\"json\": [1, 2.5e-9]}"}
	text := func() string {
		var b []byte
		for n := rng.IntN(5); n > 0; n-- {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		return string(b)
	}
	opt := func() *string {
		if rng.IntN(2) == 0 {
			return nil
		}
		s := text()
		return &s
	}
	floats := []float64{0, 0.1 + 0.2, 1e-7, 1.5e-6, 123456789.125, 1e21, 9.99e20, 1e6, math.SmallestNonzeroFloat64, 0.0004}
	metas := []Object{nil, Object(`{}`), Object(`{"a":"<x>&\u2028","n":12345678901234567890,"d":{"e":[true,null,1.5]}}`),
		Object("{\"s\":\"\u2029 \u00e9\"}")}
	for i := 0; i < 2000; i++ {
		m := Message{ID: "msg_" + text(), SessionID: text(), Seq: rng.Int64(), Role: Role(text()), Content: TextContent(text()),
			Name: opt(), ToolCallID: opt(), AgentID: opt(), Model: opt(), Tokens: rng.Int64N(1e9),
			Cost: floats[rng.IntN(len(floats))], Metadata: metas[rng.IntN(len(metas))], CreatedAt: Time(rng.Int64N(4e12))}
		switch rng.IntN(3) {
		case 1:
			m.ToolCalls = []ToolCall{}
		case 2:
			m.ToolCalls = []ToolCall{{ID: text(), Name: text(), Arguments: text()}, {ID: "c2", Name: "f", Arguments: `{"x":"<y>"}`,
				ProviderData: Object(`{"id":"fc_1","n":"<&>\u2028"}`)}}
		}
		if rng.IntN(3) == 0 {
			txt := text()
			m.Content = Content{Text: txt, Parts: []Part{{Type: PartText, Text: &txt, Annotations: JSON(`[{"u":"<a>"}]`)},
				{Type: PartImage, FileID: "file_0123", MediaType: "image/png"}, {Type: PartReasoning, Summary: []string{text()}}}}
		}
		m.IsError = rng.IntN(2) == 0
		if rng.IntN(2) == 0 {
			m.ProviderItem = ProviderItem(`{"type":"message","id":"msg_1","x":"<&>"}`)
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendMessageJSON(nil, &m); !bytes.Equal(got, want) {
			t.Fatalf("message %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
	cur := "abc"
	for _, p := range []Page[Message]{{}, {Data: []Message{}, HasMore: true, NextCursor: &cur}, {Data: []Message{{ID: "x"}}}} {
		want, _ := json.Marshal(p)
		if got := AppendMessagePageJSON(nil, &p); !bytes.Equal(got, want) {
			t.Fatalf("page:\ngot  %s\nwant %s", got, want)
		}
	}
}

// A context answer is encoding/json's bytes too, with and without its parts.
func TestContextJSONMatchesEncodingJSON(t *testing.T) {
	n, first := int64(4000), int64(2)
	model := "gpt-x"
	txt := "a <b> & c"
	for _, c := range []Context{
		{SessionID: "s", Messages: []Message{}},
		{SessionID: "s\u2028<", LastSeq: 9, MaxTokens: &n, Tokens: 77, OverBudget: true,
			Compaction: &Compaction{ID: "cmp_1", SessionID: "s", ThroughSeq: 3, Summary: Content{Text: txt, Parts: []Part{{Type: PartText, Text: &txt}}},
				Model: &model, ProviderItem: ProviderItem(`{"type":"compaction","x":"<>"}`), CreatedAt: 1},
			Messages: []Message{{ID: "m", SessionID: "s", Seq: 4, Role: RoleUser, Content: TextContent("<hi>"), Metadata: Object(`{"k":"&"}`)}},
			Blocks:   []Block{{Label: "persona", Value: "I <help>"}},
			Omitted:  ContextOmitted{Messages: 1, Tokens: 5, FirstSeq: &first, LastSeq: &first}},
	} {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendContextJSON(nil, &c)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("context:\ngot  %s\nwant %s (%v)", got, want, err)
		}
	}
}
