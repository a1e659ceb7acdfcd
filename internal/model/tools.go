package model

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The Letta memory tools, with Letta's names and argument names, so that a runtime
// can forward a model's tool call to POST /v1/agents/{id}/tools/{name} unchanged.

// ToolDef describes a tool the way model APIs take it: a name, what it does, and
// a JSON Schema of its arguments.
type ToolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// ToolResult is what the model reads back. A failure the model can act on (a
// missing block, a limit, text not found) is a result with IsError set, because
// the model must see it to correct itself.
type ToolResult struct {
	Result  string `json:"result"`
	IsError bool   `json:"is_error"`
}

// ArchivalPageSize is Letta's page size for archival_memory_search.
const ArchivalPageSize = 5

// Letta adds request_heartbeat to every tool's arguments; it is accepted, so that
// calls can be forwarded unchanged, and ignored.
type heartbeat struct {
	RequestHeartbeat *bool `json:"request_heartbeat,omitempty"`
}

type CoreMemoryAppendArgs struct {
	heartbeat
	Label   string `json:"label" validate:"required,max=64"`
	Content string `json:"content" validate:"required"`
}

type CoreMemoryReplaceArgs struct {
	heartbeat
	Label      string `json:"label" validate:"required,max=64"`
	OldContent string `json:"old_content" validate:"required"`
	NewContent string `json:"new_content"`
}

type ArchivalMemoryInsertArgs struct {
	heartbeat
	Content string   `json:"content" validate:"required,max=1000000"`
	Tags    []string `json:"tags" validate:"max=64,dive,min=1,max=128"`
}

type ArchivalMemorySearchArgs struct {
	heartbeat
	Query         string   `json:"query" validate:"required"`
	Page          *int     `json:"page" validate:"omitempty,min=0,max=1000"`
	Tags          []string `json:"tags" validate:"max=64"`
	StartDatetime *string  `json:"start_datetime"`
	EndDatetime   *string  `json:"end_datetime"`
}

type ConversationSearchArgs struct {
	heartbeat
	Query     string  `json:"query" validate:"required"`
	Roles     []Role  `json:"roles" validate:"dive,oneof=assistant user tool system"`
	Limit     *int    `json:"limit" validate:"omitempty,min=1,max=100"`
	StartDate *string `json:"start_date"`
	EndDate   *string `json:"end_date"`
}

func stringProp(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

func nullable(typ, desc string) map[string]any {
	return map[string]any{"type": []string{typ, "null"}, "description": desc}
}

func schema(required []string, props map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// MemoryTools lists the tools of POST /v1/agents/{id}/tools/{name}: Letta's
// older tools, then newMemoryTools.
var MemoryTools = append(oldMemoryTools, newMemoryTools...)

var oldMemoryTools = []ToolDef{
	{Name: "core_memory_append",
		Description: "Append to the contents of core memory.",
		Parameters: schema([]string{"label", "content"}, map[string]any{
			"label":   stringProp("Section of the memory to be edited."),
			"content": stringProp("Content to write to the memory. All unicode (including emojis) are supported."),
		})},
	{Name: "core_memory_replace",
		Description: "Replace the contents of core memory. To delete memories, use an empty string for new_content.",
		Parameters: schema([]string{"label", "old_content", "new_content"}, map[string]any{
			"label":       stringProp("Section of the memory to be edited."),
			"old_content": stringProp("String to replace. Must be an exact match."),
			"new_content": stringProp("Content to write to the memory. All unicode (including emojis) are supported."),
		})},
	{Name: "archival_memory_insert",
		Description: "Add to archival memory. Make sure to phrase the memory contents such that it can be easily queried later.",
		Parameters: schema([]string{"content"}, map[string]any{
			"content": stringProp("Content to write to the memory. All unicode (including emojis) are supported."),
			"tags": map[string]any{"type": []string{"array", "null"}, "items": map[string]any{"type": "string"},
				"description": "Optional tags to categorize the memory."},
		})},
	{Name: "archival_memory_search",
		Description: "Search archival memory by keywords: passages holding more of the words rank higher.",
		Parameters: schema([]string{"query"}, map[string]any{
			"query": stringProp("String to search for."),
			"page": map[string]any{"type": []string{"integer", "null"}, "minimum": 0,
				"description": "Allows you to page through results. Only use on a follow-up query. Defaults to 0 (first page)."},
			"tags": map[string]any{"type": []string{"array", "null"}, "items": map[string]any{"type": "string"},
				"description": "Optional list of tags; only memories carrying all of them are returned."},
			"start_datetime": nullable("string", "Only return memories created at or after this time (ISO 8601, e.g. 2024-01-15 or 2024-01-15T09:30)."),
			"end_datetime":   nullable("string", "Only return memories created at or before this time (ISO 8601)."),
		})},
	{Name: "conversation_search",
		Description: "Search prior conversation history by keywords: messages holding more of the words rank higher.",
		Parameters: schema([]string{"query"}, map[string]any{
			"query": stringProp("String to search for."),
			"roles": map[string]any{"type": []string{"array", "null"},
				"items":       map[string]any{"type": "string", "enum": []string{"assistant", "user", "tool", "system"}},
				"description": "Optional list of message roles to filter by."},
			"limit":      map[string]any{"type": []string{"integer", "null"}, "minimum": 1, "maximum": 100, "description": "Maximum number of results to return."},
			"start_date": nullable("string", "Only return messages at or after this date (YYYY-MM-DD or ISO 8601 datetime)."),
			"end_date":   nullable("string", "Only return messages at or before this date (YYYY-MM-DD, which includes that whole day, or ISO 8601 datetime)."),
		})},
}

// ParseToolTime reads the dates models write: YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS],
// or full RFC 3339; naive times are UTC. A date-only end is the end of that day.
func ParseToolTime(s string, endOfDay bool) (Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return TimeOf(t), nil
		}
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if endOfDay {
			t = t.Add(24*time.Hour - time.Millisecond)
		}
		return TimeOf(t), nil
	}
	return 0, fmt.Errorf("Invalid date format: %s. Use ISO 8601 format (YYYY-MM-DD or YYYY-MM-DDTHH:MM)", s)
}

// ToolText renders search hits as Letta does: a count, then a JSON list.
func ToolText(prefix string, items any, n int) string {
	if n == 0 {
		return "No results found."
	}
	b, _ := json.Marshal(items)
	return prefix + " " + string(b)
}

// ToolError renders a failure the model should read.
func ToolError(format string, args ...any) ToolResult {
	return ToolResult{Result: fmt.Sprintf(format, args...), IsError: true}
}
