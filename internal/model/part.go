package model

import (
	"bytes"
	"encoding/json"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The kinds of content part. They are the union of what OpenAI's Responses items
// and Anthropic's content blocks carry, named after neither, so that both map in
// and out without loss (README, "Content parts"):
//
//   - text: OpenAI input_text/output_text, Anthropic text (annotations holds
//     OpenAI's annotations or Anthropic's citations);
//   - image: OpenAI input_image, Anthropic image (a URL, a data: URL for base64, or
//     a file_id);
//   - file: OpenAI input_file, Anthropic document;
//   - reasoning: OpenAI reasoning items (summary, encrypted_content), Anthropic
//     thinking (text, signature) and redacted_thinking (encrypted_content);
//   - refusal: OpenAI refusal;
//   - data: an application's named JSON value (the AI SDK's data-* parts);
//   - json: a tool's result as a JSON value, not JSON text in a string (the
//     AI SDK's tool outputs, MCP's structured content).
const (
	PartText      = "text"
	PartImage     = "image"
	PartFile      = "file"
	PartReasoning = "reasoning"
	PartRefusal   = "refusal"
	PartData      = "data"
	PartJSON      = "json"
)

// Bounds on parts. A part's text, URL or encrypted payload may each be as long as
// a string content; a message holds at most MaxParts parts.
const (
	MaxParts     = 128
	MaxPartChars = 1 << 20
)

// Part is one typed piece of a message's content. Which fields a part may carry
// depends on its Type (partFields); ProviderData keeps whatever a provider's
// block had beyond them (Anthropic's cache_control, a document's title), so a
// runtime gets its block back whole.
type Part struct {
	Type             string   `json:"type"`
	Text             *string  `json:"text,omitempty"`
	Annotations      JSON     `json:"annotations,omitempty"`
	FileID           string   `json:"file_id,omitempty"`
	URL              string   `json:"url,omitempty"`
	MediaType        string   `json:"media_type,omitempty"`
	Filename         string   `json:"filename,omitempty"`
	Detail           string   `json:"detail,omitempty"`
	Summary          []string `json:"summary,omitzero"` // [] (a reasoning item with no summary) stays []
	EncryptedContent string   `json:"encrypted_content,omitempty"`
	Signature        string   `json:"signature,omitempty"`
	// Name and Value are a data part's; Value alone a json part's. Value is
	// any JSON value, null included, kept as written (compact).
	Name         string `json:"name,omitempty"`
	Value        JSON   `json:"value,omitempty"`
	ProviderData Object `json:"provider_data,omitempty"`

	// lifted marks a part whose data: URL the server stored as a file
	// (inline.go): it holds both FileID and the URL cut after its comma,
	// which no client may send.
	lifted bool
}

// Content is a message's content: a string (Parts nil), or an array of parts.
// For parts, Text is what conversation search indexes: the text of text and
// refusal parts and reasoning summaries, never a URL, base64 or an encrypted
// payload (SearchText).
type Content struct {
	Text  string
	Parts []Part
}

// TextContent is string content.
func TextContent(s string) Content { return Content{Text: s} }

// IsParts reports content given as an array of parts.
func (c Content) IsParts() bool { return c.Parts != nil }

// SearchText is the text of the parts a search should find, one part a line.
func SearchText(parts []Part) string {
	var b strings.Builder
	line := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	for i := range parts {
		p := &parts[i]
		switch p.Type {
		case PartText, PartRefusal:
			if p.Text != nil {
				line(*p.Text)
			}
		case PartReasoning:
			for _, s := range p.Summary {
				line(s)
			}
		}
	}
	return b.String()
}

// MarshalJSON writes the string, or the array of parts.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return json.Marshal(c.Parts)
	}
	return json.Marshal(c.Text)
}

// UnmarshalJSONFrom is the strict decoder's way in: the parts are decoded under
// the same rules as the body around them (unknown fields refused, and so on).
func (c *Content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		*c = Content{Text: tok.String()}
		return nil
	case '[':
		var parts []Part
		if err := jsonv2.UnmarshalDecode(dec, &parts); err != nil {
			return err
		}
		if parts == nil {
			parts = []Part{}
		}
		*c = Content{Parts: parts, Text: SearchText(parts)}
		return nil
	case 'n':
		_, err := dec.ReadToken()
		*c = Content{}
		return err
	}
	if err := dec.SkipValue(); err != nil {
		return err
	}
	return valueError("must be a string or an array of parts")
}

// UnmarshalJSON serves encoding/json (tests, stored rows): the same forms.
func (c *Content) UnmarshalJSON(b []byte) error {
	return c.UnmarshalJSONFrom(jsontext.NewDecoder(bytes.NewReader(b), strict))
}

// MaxProviderItemBytes bounds a provider_item: it is a runtime's whole original
// item, content included, so it may be as large as a message.
const MaxProviderItemBytes = 4 << 20

// ProviderItem is a runtime's original item (an OpenAI Responses item, an
// Anthropic message), any JSON object, kept as its compact text and returned as
// it came: keys in their order, numbers and string escapes as written.
type ProviderItem []byte

func (p *ProviderItem) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*p = nil
		return nil
	}
	v, err := checkValue(b, MaxProviderItemBytes)
	if err != nil {
		return err
	}
	if v[0] != '{' {
		return valueError("must be an object")
	}
	*p = ProviderItem(v)
	return nil
}

// MarshalJSON writes the stored text; nil is null.
func (p ProviderItem) MarshalJSON() ([]byte, error) {
	if len(p) == 0 {
		return []byte("null"), nil
	}
	return p, nil
}

// String is the string content, or the parts as JSON: for logs and tests.
func (c Content) String() string {
	if c.Parts != nil {
		b, _ := c.MarshalJSON()
		return string(b)
	}
	return c.Text
}
