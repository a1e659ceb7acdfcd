package model

import (
	"fmt"
	"strings"
)

// Letta's current memory tools (memory_insert, memory_replace, memory_rethink)
// and Anthropic's memory tool (memory, type memory_20250818), whose /memories
// directory is the agent's blocks: /memories/<label> is the block <label>.

type MemoryInsertArgs struct {
	heartbeat
	Label      string `json:"label" validate:"required,max=64"`
	NewStr     string `json:"new_str" validate:"required"`
	InsertLine *int   `json:"insert_line"`
}

type MemoryReplaceArgs struct {
	heartbeat
	Label  string `json:"label" validate:"required,max=64"`
	OldStr string `json:"old_str" validate:"required"`
	NewStr string `json:"new_str"`
}

type MemoryRethinkArgs struct {
	heartbeat
	Label     string `json:"label" validate:"required,max=64"`
	NewMemory string `json:"new_memory"`
}

// MemoryToolArgs are the arguments of Anthropic's memory tool, all commands in one.
type MemoryToolArgs struct {
	Command    string  `json:"command" validate:"required,oneof=view create str_replace insert delete rename"`
	Path       *string `json:"path"`
	FileText   *string `json:"file_text"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	InsertText *string `json:"insert_text"`
	ViewRange  []int   `json:"view_range" validate:"omitempty,len=2"`
	OldPath    *string `json:"old_path"`
	NewPath    *string `json:"new_path"`
}

// MemoryDir is the directory of Anthropic's memory tool.
const MemoryDir = "/memories"

// MemoryPath reads a memory tool path: "" for /memories itself, else the label
// of the block it names. Anything else (outside /memories, "..", encoded or
// nested names) is refused with the text the model reads.
func MemoryPath(p string) (label string, err error) {
	if p == MemoryDir || p == MemoryDir+"/" {
		return "", nil
	}
	name, ok := strings.CutPrefix(p, MemoryDir+"/")
	if !ok || name == "." || name == ".." || !ValidLabel(name) {
		return "", ToolRefusal("Error: The path %s is not allowed. Paths must be %s or a file directly in it, %s/<name> (letters, digits, _ . : -, at most 64 characters).",
			p, MemoryDir, MemoryDir)
	}
	return name, nil
}

// ToolRefusal is a tool call the model got wrong and can fix: the run answers
// its text with is_error, and nothing is written.
func ToolRefusal(format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Code: "tool_refused", Msg: fmt.Sprintf(format, args...)}
}

// NumberedLines renders lines as `cat -n` does, numbering from first.
func NumberedLines(lines []string, first int) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", first+i, l)
	}
	return b.String()
}

// HumanSize renders a size as du -h does (the directory view's sizes).
func HumanSize(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1fK", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/(1024*1024))
	}
}

// InsertLines puts text after line `at` of value (0: before the first line);
// at must lie in [0, number of lines].
func InsertLines(value, text string, at int) string {
	lines := strings.Split(value, "\n")
	out := append(append(append([]string{}, lines[:at]...), strings.Split(text, "\n")...), lines[at:]...)
	return strings.Join(out, "\n")
}

// LineCount is the number of lines of value as the memory tools count them.
func LineCount(value string) int { return len(strings.Split(value, "\n")) }

// LinesHolding lists the 1-based lines of value that hold s.
func LinesHolding(value, s string) []int {
	var out []int
	for i, l := range strings.Split(value, "\n") {
		if strings.Contains(l, s) {
			out = append(out, i+1)
		}
	}
	return out
}

func intProp(desc string) map[string]any {
	return map[string]any{"type": "integer", "description": desc}
}

// newMemoryTools are Letta's current block tools and Anthropic's memory tool.
var newMemoryTools = []ToolDef{
	{Name: "memory_insert",
		Description: "The memory_insert command allows you to insert text at a specific location in a memory block.",
		Parameters: schema([]string{"label", "new_str"}, map[string]any{
			"label":       stringProp("Section of the memory to be edited, identified by its label."),
			"new_str":     stringProp("The text to insert. Do not include line number prefixes."),
			"insert_line": intProp("The line number after which to insert the text (0 for beginning of file). Defaults to -1 (end of the file)."),
		})},
	{Name: "memory_replace",
		Description: "The memory_replace command allows you to replace a specific string in a memory block with a new string. This is used for making precise edits.",
		Parameters: schema([]string{"label", "old_str", "new_str"}, map[string]any{
			"label":   stringProp("Section of the memory to be edited, identified by its label."),
			"old_str": stringProp("The text to replace (must match exactly, including whitespace and indentation)."),
			"new_str": stringProp("The new text to insert in place of the old text. Do not include line number prefixes."),
		})},
	{Name: "memory_rethink",
		Description: "The memory_rethink command allows you to completely rewrite the contents of a memory block. Use this tool to make large sweeping changes (e.g. when you want to condense or reorganize the memory blocks), do NOT use this tool to make small precise edits (e.g. add or remove a line, replace a specific string, etc).",
		Parameters: schema([]string{"label", "new_memory"}, map[string]any{
			"label":      stringProp("The memory block to be rewritten, identified by its label."),
			"new_memory": stringProp("The new memory contents with information integrated from existing memory blocks and the conversation context. Do not include line number prefixes."),
		})},
	{Name: "memory",
		Description: "Anthropic's memory tool (type memory_20250818): view, create, str_replace, insert, delete and rename files in the /memories directory. Each file /memories/<name> is the agent's memory block <name>.",
		Parameters: map[string]any{"type": "object", "required": []string{"command"}, "additionalProperties": false,
			"properties": map[string]any{
				"command": map[string]any{"type": "string", "enum": []string{"view", "create", "str_replace", "insert", "delete", "rename"},
					"description": "The operation to perform."},
				"path":        stringProp("The path: /memories, or a file /memories/<name>."),
				"file_text":   stringProp("The content of the file to create (create)."),
				"old_str":     stringProp("The text to replace; it must occur exactly once (str_replace)."),
				"new_str":     stringProp("The replacement text (str_replace)."),
				"insert_line": intProp("The line after which to insert; 0 inserts at the top (insert)."),
				"insert_text": stringProp("The text to insert (insert)."),
				"view_range": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "minItems": 2, "maxItems": 2,
					"description": "Optional [start, end] lines to view, 1-based; end -1 means the last line (view)."},
				"old_path": stringProp("The file to rename, /memories/<name> (rename)."),
				"new_path": stringProp("The file's new path, /memories/<name>; it must not exist yet (rename)."),
			}}},
}
