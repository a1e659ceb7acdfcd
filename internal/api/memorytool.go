package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// The block tools of Letta's current tool set, and Anthropic's memory tool over
// the agent's blocks. Each edit is one EditBlock call: the check (one
// occurrence, a line in range, a file not there yet) and the write are atomic.

func (s *Server) memoryInsert(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
	in, err := decode[model.MemoryInsertArgs](s, w, r)
	if err != nil {
		return model.ToolResult{}, err
	}
	_, err = s.store.EditBlock(ctx, tenant, agentID, in.Label, repo.EditByTool, false, func(b *model.Block) error {
		n, at := model.LineCount(b.Value), -1
		if in.InsertLine != nil {
			at = *in.InsertLine
		}
		switch {
		case at == -1:
			at = n
		case at < 0 || at > n:
			return model.ToolRefusal("Invalid `insert_line` parameter: %d. It should be within the range of lines of the memory block: [0, %d], or -1 to append to the end of the memory block.", at, n)
		}
		if b.Value == "" {
			b.Value = in.NewStr
		} else {
			b.Value = model.InsertLines(b.Value, in.NewStr, at)
		}
		return nil
	})
	return s.lettaEdited(ctx, tenant, agentID, in.Label, err)
}

func (s *Server) memoryReplace(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
	in, err := decode[model.MemoryReplaceArgs](s, w, r)
	if err != nil {
		return model.ToolResult{}, err
	}
	_, err = s.store.EditBlock(ctx, tenant, agentID, in.Label, repo.EditByTool, false, func(b *model.Block) error {
		switch strings.Count(b.Value, in.OldStr) {
		case 0:
			return model.ToolRefusal("No replacement was performed, old_str `%s` did not appear verbatim in memory block with label `%s`.", in.OldStr, in.Label)
		case 1:
			b.Value = strings.Replace(b.Value, in.OldStr, in.NewStr, 1)
			return nil
		default:
			return model.ToolRefusal("No replacement was performed. Multiple occurrences of old_str `%s` in lines %v. Please ensure it is unique.",
				in.OldStr, model.LinesHolding(b.Value, in.OldStr))
		}
	})
	return s.lettaEdited(ctx, tenant, agentID, in.Label, err)
}

// memoryRethink rewrites a block whole, creating it when missing, as Letta does.
func (s *Server) memoryRethink(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
	in, err := decode[model.MemoryRethinkArgs](s, w, r)
	if err != nil {
		return model.ToolResult{}, err
	}
	_, err = s.store.EditBlock(ctx, tenant, agentID, in.Label, repo.EditByTool, true, func(b *model.Block) error {
		b.Value = in.NewMemory
		return nil
	})
	return s.lettaEdited(ctx, tenant, agentID, in.Label, err)
}

// lettaEdited answers as Letta's server does after an edit, in its first sentence.
func (s *Server) lettaEdited(ctx context.Context, tenant, agentID, label string, err error) (model.ToolResult, error) {
	res, err := s.memoryEdited(ctx, tenant, agentID, label, err)
	if err == nil && !res.IsError {
		res.Result = fmt.Sprintf("The core memory block with label `%s` has been edited.", label)
	}
	return res, err
}

// memoryTool runs one command of Anthropic's memory tool. A path outside
// /memories is refused before any store call.
func (s *Server) memoryTool(ctx context.Context, w http.ResponseWriter, r *http.Request, tenant, agentID string) (model.ToolResult, error) {
	in, err := decode[model.MemoryToolArgs](s, w, r)
	if err != nil {
		return model.ToolResult{}, err
	}
	if in.Command == "rename" {
		return s.memoryRename(ctx, tenant, agentID, in)
	}
	if in.Path == nil {
		return model.ToolResult{}, model.ToolRefusal("Error: Parameter `path` is required for command: %s", in.Command)
	}
	path := *in.Path
	label, err := model.MemoryPath(path)
	if err != nil {
		return model.ToolResult{}, err
	}
	if label == "" && in.Command != "view" {
		return model.ToolResult{}, model.ToolRefusal("Error: %s is a directory; the %s command needs a file, %s/<name>", path, in.Command, model.MemoryDir)
	}
	missing := func(err error) (model.ToolResult, error) {
		if model.IsNotFound(err, "block") {
			return model.ToolError("Error: The path %s does not exist. Please provide a valid path.", path), nil
		}
		return model.ToolResult{}, err
	}
	required := func(name string, present bool) error {
		if !present {
			return model.ToolRefusal("Error: Parameter `%s` is required for command: %s", name, in.Command)
		}
		return nil
	}
	switch in.Command {
	case "view":
		if label == "" {
			return s.memoryDirView(ctx, tenant, agentID)
		}
		b, err := s.store.GetBlock(ctx, tenant, agentID, label)
		if err != nil {
			return missing(err)
		}
		return memoryFileView(path, b.Value, in.ViewRange)
	case "create":
		if err := required("file_text", in.FileText != nil); err != nil {
			return model.ToolResult{}, err
		}
		_, err := s.store.EditBlock(ctx, tenant, agentID, label, repo.EditByTool, true, func(b *model.Block) error {
			if b.Version != 0 {
				return model.ToolRefusal("Error: File %s already exists", path)
			}
			b.Value = *in.FileText
			return nil
		})
		if err != nil {
			return model.ToolResult{}, err
		}
		return model.ToolResult{Result: "File created successfully at: " + path}, nil
	case "str_replace":
		if err := required("old_str", in.OldStr != nil && *in.OldStr != ""); err != nil {
			return model.ToolResult{}, err
		}
		newStr := ""
		if in.NewStr != nil {
			newStr = *in.NewStr
		}
		b, err := s.store.EditBlock(ctx, tenant, agentID, label, repo.EditByTool, false, func(b *model.Block) error {
			switch strings.Count(b.Value, *in.OldStr) {
			case 0:
				return model.ToolRefusal("No replacement was performed, old_str `%s` did not appear verbatim in %s.", *in.OldStr, path)
			case 1:
				b.Value = strings.Replace(b.Value, *in.OldStr, newStr, 1)
				return nil
			default:
				return model.ToolRefusal("No replacement was performed. Multiple occurrences of old_str `%s` in lines: %v. Please ensure it is unique",
					*in.OldStr, model.LinesHolding(b.Value, *in.OldStr))
			}
		})
		if err != nil {
			return missing(err)
		}
		return model.ToolResult{Result: "The memory file has been edited.\n" + editSnippet(b.Value, newStr)}, nil
	case "insert":
		if err := required("insert_line", in.InsertLine != nil); err != nil {
			return model.ToolResult{}, err
		}
		if err := required("insert_text", in.InsertText != nil); err != nil {
			return model.ToolResult{}, err
		}
		_, err := s.store.EditBlock(ctx, tenant, agentID, label, repo.EditByTool, false, func(b *model.Block) error {
			n := model.LineCount(b.Value)
			if at := *in.InsertLine; at < 0 || at > n {
				return model.ToolRefusal("Error: Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]", at, n)
			}
			if b.Value == "" {
				b.Value = *in.InsertText
			} else {
				b.Value = model.InsertLines(b.Value, *in.InsertText, *in.InsertLine)
			}
			return nil
		})
		if err != nil {
			return missing(err)
		}
		return model.ToolResult{Result: fmt.Sprintf("The file %s has been edited.", path)}, nil
	default: // delete
		// The read-only check and the delete are two calls: a block made
		// read-only between them is still deleted.
		b, err := s.store.GetBlock(ctx, tenant, agentID, label)
		if err != nil {
			return missing(err)
		}
		if b.ReadOnly {
			return model.ToolResult{}, model.ReadOnlyBlock(label)
		}
		if err := s.store.DeleteBlock(ctx, tenant, agentID, label); err != nil {
			return missing(err)
		}
		return model.ToolResult{Result: "Successfully deleted " + path}, nil
	}
}

// memoryRename renames a block, its value and its history, as the memory
// tool renames a file; both paths are read as the other commands read path.
func (s *Server) memoryRename(ctx context.Context, tenant, agentID string, in model.MemoryToolArgs) (model.ToolResult, error) {
	var labels [2]string
	for i, p := range []struct {
		name string
		path *string
	}{{"old_path", in.OldPath}, {"new_path", in.NewPath}} {
		if p.path == nil {
			return model.ToolResult{}, model.ToolRefusal("Error: Parameter `%s` is required for command: rename", p.name)
		}
		label, err := model.MemoryPath(*p.path)
		if err != nil {
			return model.ToolResult{}, err
		}
		if label == "" {
			return model.ToolResult{}, model.ToolRefusal("Error: %s is a directory; the rename command needs a file, %s/<name>", *p.path, model.MemoryDir)
		}
		labels[i] = label
	}
	_, err := s.store.RenameBlock(ctx, tenant, agentID, labels[0], labels[1], repo.EditByTool)
	switch {
	case model.IsNotFound(err, "block"):
		return model.ToolError("Error: The path %s does not exist", *in.OldPath), nil
	case model.AsError(err).Code == "block_exists" || model.AsError(err).Code == "conflict":
		return model.ToolError("Error: The destination %s already exists", *in.NewPath), nil
	case err != nil:
		return model.ToolResult{}, err
	}
	return model.ToolResult{Result: fmt.Sprintf("Successfully renamed %s to %s", *in.OldPath, *in.NewPath)}, nil
}

func (s *Server) memoryDirView(ctx context.Context, tenant, agentID string) (model.ToolResult, error) {
	blocks, err := s.store.ListBlocks(ctx, tenant, agentID)
	if err != nil {
		return model.ToolResult{}, err
	}
	total := 0
	var files strings.Builder
	for _, b := range blocks {
		total += len(b.Value)
		fmt.Fprintf(&files, "%s\t%s/%s\n", model.HumanSize(len(b.Value)), model.MemoryDir, b.Label)
	}
	return model.ToolResult{Result: fmt.Sprintf("Here're the files and directories up to 2 levels deep in %s, excluding hidden items and node_modules:\n%s\t%s\n%s",
		model.MemoryDir, model.HumanSize(total), model.MemoryDir, files.String())}, nil
}

func memoryFileView(path, value string, viewRange []int) (model.ToolResult, error) {
	lines := strings.Split(value, "\n")
	first, last := 1, len(lines)
	if viewRange != nil {
		first, last = viewRange[0], viewRange[1]
		if last == -1 {
			last = len(lines)
		}
		if first < 1 || first > len(lines) || last < first || last > len(lines) {
			return model.ToolResult{}, model.ToolRefusal("Error: Invalid `view_range` parameter: %v. It should be [start, end] with 1 <= start <= end <= %d (the file's lines), or end -1 for the last line.",
				viewRange, len(lines))
		}
	}
	return model.ToolResult{Result: fmt.Sprintf("Here's the content of %s with line numbers:\n%s", path,
		model.NumberedLines(lines[first-1:last], first))}, nil
}

// editSnippet shows the lines around newStr in value, numbered, as the
// memory tool answers a str_replace.
func editSnippet(value, newStr string) string {
	lines := strings.Split(value, "\n")
	at := 0
	if i := strings.Index(value, newStr); i >= 0 {
		at = strings.Count(value[:i], "\n")
	}
	from := max(0, at-4)
	to := min(len(lines), at+strings.Count(newStr, "\n")+5)
	return model.NumberedLines(lines[from:to], from+1)
}
