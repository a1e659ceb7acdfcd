package model

import (
	"encoding/json"
	"strconv"
	"strings"
)

// MaxExportLine is the longest line an export writes and an import reads
// whole. Every record that travels as one line (a message, a checkpoint's
// state, a compaction) is bounded so that its line fits, however its bytes are
// escaped on the way out (a control character or a '<' takes six).
const MaxExportLine = 8 << 20

// MaxRecordJSON is what a message or a compaction may take as JSON, leaving
// room for the line around it.
const MaxRecordJSON = MaxExportLine - 4<<10

// recordTooLarge names field (the record's largest) in the error.
func recordTooLarge(field string, n int) FieldError {
	return FieldError{Field: field, Message: "the message would take " + strconv.Itoa(n) +
		" bytes as JSON, over the limit of " + strconv.Itoa(MaxRecordJSON) + " (an export line must hold it)"}
}

// Most values are far below the bound even escaped six times over: only those
// that might not fit are encoded to be measured.
func mightNotFit(raw int) bool { return raw*6+64<<10 > MaxRecordJSON }

// RecordSize is the length of m's JSON once stored, with ids of the longest
// kind: what MaxRecordJSON bounds.
func (m *NewMessage) RecordSize() int {
	long := strings.Repeat("x", 128)
	msg := Message{ID: long, ClientID: m.ClientID, SessionID: long, Seq: 1 << 62, Role: m.Role, Content: m.Content, Name: m.Name,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, IsError: m.IsError, AgentID: m.AgentID, Model: m.Model,
		Tokens: m.Tokens, Cost: m.Cost, Metadata: m.Metadata, ProviderItem: m.ProviderItem, CreatedAt: 1 << 50}
	return len(AppendMessageJSON(nil, &msg))
}

// rawSize is a quick upper bound of m's bytes before escaping.
func (m *NewMessage) rawSize() (n int, largest string) {
	sizes := map[string]int{"content": len(m.Content.Text), "provider_item": len(m.ProviderItem), "metadata": len(m.Metadata)}
	for i := range m.Content.Parts {
		sizes["content"] += m.Content.Parts[i].size() + 64
	}
	for _, c := range m.ToolCalls {
		sizes["tool_calls"] += len(c.ID) + len(c.Name) + len(c.Arguments) + len(c.ProviderData) + 64
	}
	for _, f := range []string{"content", "provider_item", "metadata", "tool_calls"} {
		n += sizes[f]
		if largest == "" || sizes[f] > sizes[largest] {
			largest = f
		}
	}
	return n + 4<<10, largest
}

// compactionJSONSize is the length of c's JSON as a compaction line holds it.
func (c *CreateCompaction) jsonSize() int {
	long := strings.Repeat("x", 128)
	b, _ := json.Marshal(Compaction{ID: long, SessionID: long, ThroughSeq: c.ThroughSeq, Summary: c.Summary,
		Tokens: c.Tokens, Model: c.Model, ProviderItem: c.ProviderItem, CreatedAt: 1 << 50})
	return len(b)
}
