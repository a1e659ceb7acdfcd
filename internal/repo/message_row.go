package repo

import (
	"encoding/json"

	"github.com/logbook/logbook/internal/model"
)

// NewStoredMessage is the message an append of in stores under id, before
// its seq is known: what both backends insert and answer.
func NewStoredMessage(id, sessionID string, now model.Time, in model.NewMessage) model.Message {
	m := model.Message{
		ID: id, ClientID: in.ClientID, SessionID: sessionID, Role: in.Role, Content: in.Content,
		Name: in.Name, ToolCalls: in.ToolCalls, ToolCallID: in.ToolCallID, IsError: in.IsError, AgentID: in.AgentID,
		Model: in.Model, Tokens: in.Tokens, Cost: in.Cost, Metadata: in.Metadata, ProviderItem: in.ProviderItem,
		CreatedAt: now,
	}
	if m.Metadata == nil {
		m.Metadata = model.Object("{}")
	}
	return m
}

// StoredColumns are the text columns a message stores beside its content
// text, each nil (NULL) when absent: its parts as JSON, its provider item, and
// its tool calls as JSON.
func StoredColumns(m model.Message) (parts, item, toolCalls *string, err error) {
	if m.Content.Parts != nil {
		b, err := json.Marshal(m.Content.Parts)
		if err != nil {
			return nil, nil, nil, model.Internal(err)
		}
		p := string(b)
		parts = &p
	}
	if len(m.ProviderItem) > 0 {
		p := string(m.ProviderItem)
		item = &p
	}
	if len(m.ToolCalls) > 0 {
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return nil, nil, nil, model.Internal(err)
		}
		t := string(b)
		toolCalls = &t
	}
	return parts, item, toolCalls, nil
}
