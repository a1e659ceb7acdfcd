package model

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// Messages are what Logbook writes most (every append answers one, every page
// holds up to 200), so they are encoded by hand: encoding/json spent a fifth of
// a page's CPU finding its way through the struct by reflection and calling
// Time.MarshalJSON. The bytes are exactly what encoding/json writes for a
// Message (TestMessageJSONMatchesEncodingJSON holds them to it), HTML-safe
// escaping included, so a client sees no difference.

// AppendMessageJSON appends m as JSON.
func AppendMessageJSON(b []byte, m *Message) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, m.ID)
	b = append(b, `,"client_id":`...)
	b = appendOptString(b, m.ClientID)
	b = append(b, `,"session_id":`...)
	b = appendJSONString(b, m.SessionID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, m.Seq, 10)
	b = append(b, `,"role":`...)
	b = appendJSONString(b, string(m.Role))
	b = append(b, `,"content":`...)
	if m.Content.Parts != nil {
		// Parts are the rarer form, with many optional fields: encoding/json's
		// bytes are the contract, so let it write them.
		parts, _ := json.Marshal(m.Content.Parts) // plain fields: cannot fail
		b = append(b, parts...)
	} else {
		b = appendJSONString(b, m.Content.Text)
	}
	b = append(b, `,"name":`...)
	b = appendOptString(b, m.Name)
	b = append(b, `,"tool_calls":`...)
	if m.ToolCalls == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendJSONString(b, c.ID)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, c.Name)
			b = append(b, `,"arguments":`...)
			b = appendJSONString(b, c.Arguments)
			if c.ClientSide {
				b = append(b, `,"client_side":true`...)
			}
			if len(c.ProviderData) > 0 {
				b = append(b, `,"provider_data":`...)
				b = appendRawJSON(b, c.ProviderData)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"tool_call_id":`...)
	b = appendOptString(b, m.ToolCallID)
	b = append(b, `,"is_error":`...)
	b = strconv.AppendBool(b, m.IsError)
	b = append(b, `,"agent_id":`...)
	b = appendOptString(b, m.AgentID)
	b = append(b, `,"model":`...)
	b = appendOptString(b, m.Model)
	b = append(b, `,"tokens":`...)
	b = strconv.AppendInt(b, m.Tokens, 10)
	b = append(b, `,"cost":`...)
	b = appendJSONFloat(b, m.Cost)
	b = append(b, `,"metadata":`...)
	if len(m.Metadata) == 0 {
		b = append(b, "{}"...)
	} else {
		b = appendRawJSON(b, m.Metadata)
	}
	b = append(b, `,"provider_item":`...)
	if len(m.ProviderItem) == 0 {
		b = append(b, "null"...)
	} else {
		b = appendRawJSON(b, m.ProviderItem)
	}
	b = append(b, `,"created_at":"`...)
	b = m.CreatedAt.AppendText(b)
	return append(b, `"}`...)
}

// AppendMessagesJSON appends a JSON array of messages ([] for none).
func AppendMessagesJSON(b []byte, ms []Message) []byte {
	b = append(b, '[')
	for i := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendMessageJSON(b, &ms[i])
	}
	return append(b, ']')
}

// AppendMessagePageJSON appends a page of messages as Page[Message] encodes.
func AppendMessagePageJSON(b []byte, p *Page[Message]) []byte {
	b = append(b, `{"data":`...)
	if p.Data == nil {
		b = append(b, "null"...)
	} else {
		b = AppendMessagesJSON(b, p.Data)
	}
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, p.HasMore)
	b = append(b, `,"next_cursor":`...)
	b = appendOptString(b, p.NextCursor)
	return append(b, '}')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// appendJSONFloat writes f as encoding/json does (ES6 number formatting). f is
// finite: the store never hands out an infinite cost (counterFloat).
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 → e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// plainByte holds the ASCII bytes a JSON string carries as they are: not
// control characters, quotes, backslashes, or the HTML-sensitive < > &.
var plainByte = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString quotes s as encoding/json does with HTML escaping on: <, >
// and & become \u003c, \u003e and \u0026, U+2028 and U+2029 are escaped, and
// invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plainByte[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendRawJSON copies compact JSON as encoding/json copies a Marshaler's
// output: <, > and & escaped (they only occur inside strings), and U+2028 and
// U+2029.
func appendRawJSON(b []byte, raw []byte) []byte {
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '<' || c == '>' || c == '&' {
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
			continue
		}
		if c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
			i += 2
			start = i + 1
		}
	}
	return append(b, raw[start:]...)
}

// AppendContextJSON appends c as encoding/json writes it, its messages by
// hand: a context read's answer is mostly messages, and encoding/json checks
// and compacts every MarshalJSON result again, a quarter of the read's CPU.
func AppendContextJSON(b []byte, c *Context) ([]byte, error) {
	b = append(b, `{"session_id":`...)
	b = appendJSONString(b, c.SessionID)
	b = append(b, `,"last_seq":`...)
	b = strconv.AppendInt(b, c.LastSeq, 10)
	b = append(b, `,"compaction":`...)
	cmp, err := json.Marshal(c.Compaction)
	if err != nil {
		return nil, err
	}
	b = append(b, cmp...)
	b = append(b, `,"messages":`...)
	if c.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = AppendMessagesJSON(b, c.Messages)
	}
	rest, err := json.Marshal(struct {
		Blocks     []Block        `json:"blocks"`
		Tokens     int64          `json:"tokens"`
		MaxTokens  *int64         `json:"max_tokens"`
		Omitted    ContextOmitted `json:"omitted"`
		OverBudget bool           `json:"over_budget"`
	}{c.Blocks, c.Tokens, c.MaxTokens, c.Omitted, c.OverBudget})
	if err != nil {
		return nil, err
	}
	b = append(b, ',')
	return append(b, rest[1:]...), nil
}
