package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// TestMemoryToolsNew runs Letta's current block tools and Anthropic's memory
// tool through the router, on the backend LOGBOOK_TEST_BACKEND names.
func TestMemoryToolsNew(t *testing.T) {
	root := newClient(t)
	c := root.as(mustKey(t, root, "t1", model.ScopeWrite).Key)
	other := root.as(mustKey(t, root, "t2", model.ScopeWrite).Key)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	c.do("PUT", "/v1/agents/a/blocks/human", map[string]any{"value": "Name: Ann\nLikes tea"}).want(t, http.StatusCreated, nil)
	c.do("PUT", "/v1/agents/a/blocks/persona", map[string]any{"value": "I am Sam.", "read_only": true}).want(t, http.StatusCreated, nil)
	value := func(label string) string {
		t.Helper()
		var b model.Block
		c.do("GET", "/v1/agents/a/blocks/"+label, nil).want(t, http.StatusOK, &b)
		return b.Value
	}
	labels := func() []string {
		t.Helper()
		var bs struct{ Data []model.Block }
		c.do("GET", "/v1/agents/a/blocks", nil).want(t, http.StatusOK, &bs)
		var out []string
		for _, b := range bs.Data {
			out = append(out, b.Label)
		}
		return out
	}

	steps := []struct {
		name    string
		tool    string
		args    map[string]any
		want    string
		isError bool
		label   string // when set, the block's value after the step
		value   string
	}{
		{"append_creates_missing_block", "core_memory_append", map[string]any{"label": "notes", "content": "first"}, "None", false, "notes", "first"},
		{"append_appends", "core_memory_append", map[string]any{"label": "notes", "content": "second"}, "None", false, "notes", "first\nsecond"},
		{"insert_at_end_by_default", "memory_insert", map[string]any{"label": "notes", "new_str": "third"},
			"The core memory block with label `notes` has been edited.", false, "notes", "first\nsecond\nthird"},
		{"insert_at_top", "memory_insert", map[string]any{"label": "notes", "new_str": "zero", "insert_line": 0},
			"The core memory block with label `notes` has been edited.", false, "notes", "zero\nfirst\nsecond\nthird"},
		{"insert_minus_one_is_end", "memory_insert", map[string]any{"label": "notes", "new_str": "four", "insert_line": -1},
			"The core memory block with label `notes` has been edited.", false, "notes", "zero\nfirst\nsecond\nthird\nfour"},
		{"insert_line_out_of_range", "memory_insert", map[string]any{"label": "notes", "new_str": "x", "insert_line": 9},
			"Invalid `insert_line` parameter: 9. It should be within the range of lines of the memory block: [0, 5], or -1 to append to the end of the memory block.", true, "notes", "zero\nfirst\nsecond\nthird\nfour"},
		{"insert_missing_block", "memory_insert", map[string]any{"label": "nope", "new_str": "x"},
			"Memory block 'nope' does not exist (available blocks: human, notes, persona)", true, "", ""},
		{"replace_once", "memory_replace", map[string]any{"label": "notes", "old_str": "zero", "new_str": "0"},
			"The core memory block with label `notes` has been edited.", false, "notes", "0\nfirst\nsecond\nthird\nfour"},
		{"replace_not_found", "memory_replace", map[string]any{"label": "notes", "old_str": "fifth", "new_str": "5"},
			"No replacement was performed, old_str `fifth` did not appear verbatim in memory block with label `notes`.", true, "", ""},
		{"replace_ambiguous", "memory_replace", map[string]any{"label": "notes", "old_str": "ir", "new_str": "x"},
			"No replacement was performed. Multiple occurrences of old_str `ir` in lines [2 4]. Please ensure it is unique.", true, "notes", "0\nfirst\nsecond\nthird\nfour"},
		{"rethink_rewrites", "memory_rethink", map[string]any{"label": "notes", "new_memory": "all new"},
			"The core memory block with label `notes` has been edited.", false, "notes", "all new"},
		{"rethink_creates", "memory_rethink", map[string]any{"label": "plans", "new_memory": "trip"},
			"The core memory block with label `plans` has been edited.", false, "plans", "trip"},

		{"view_dir", "memory", map[string]any{"command": "view", "path": "/memories"},
			"Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n39\t/memories\n19\t/memories/human\n7\t/memories/notes\n9\t/memories/persona\n4\t/memories/plans\n", false, "", ""},
		{"view_file", "memory", map[string]any{"command": "view", "path": "/memories/human"},
			"Here's the content of /memories/human with line numbers:\n     1\tName: Ann\n     2\tLikes tea\n", false, "", ""},
		{"view_range", "memory", map[string]any{"command": "view", "path": "/memories/human", "view_range": []int{2, -1}},
			"Here's the content of /memories/human with line numbers:\n     2\tLikes tea\n", false, "", ""},
		{"view_bad_range", "memory", map[string]any{"command": "view", "path": "/memories/human", "view_range": []int{3, 4}},
			"Error: Invalid `view_range` parameter: [3 4]. It should be [start, end] with 1 <= start <= end <= 2 (the file's lines), or end -1 for the last line.", true, "", ""},
		{"view_missing", "memory", map[string]any{"command": "view", "path": "/memories/nope"},
			"Error: The path /memories/nope does not exist. Please provide a valid path.", true, "", ""},
		{"create", "memory", map[string]any{"command": "create", "path": "/memories/todo.md", "file_text": "- milk\n- eggs"},
			"File created successfully at: /memories/todo.md", false, "todo.md", "- milk\n- eggs"},
		{"create_existing", "memory", map[string]any{"command": "create", "path": "/memories/todo.md", "file_text": "x"},
			"Error: File /memories/todo.md already exists", true, "todo.md", "- milk\n- eggs"},
		{"create_needs_file_text", "memory", map[string]any{"command": "create", "path": "/memories/x"},
			"Error: Parameter `file_text` is required for command: create", true, "", ""},
		{"str_replace", "memory", map[string]any{"command": "str_replace", "path": "/memories/todo.md", "old_str": "milk", "new_str": "oat milk"},
			"The memory file has been edited.\n     1\t- oat milk\n     2\t- eggs\n", false, "todo.md", "- oat milk\n- eggs"},
		{"str_replace_not_found", "memory", map[string]any{"command": "str_replace", "path": "/memories/todo.md", "old_str": "bread", "new_str": "x"},
			"No replacement was performed, old_str `bread` did not appear verbatim in /memories/todo.md.", true, "", ""},
		{"str_replace_ambiguous", "memory", map[string]any{"command": "str_replace", "path": "/memories/todo.md", "old_str": "- ", "new_str": "* "},
			"No replacement was performed. Multiple occurrences of old_str `- ` in lines: [1 2]. Please ensure it is unique", true, "todo.md", "- oat milk\n- eggs"},
		{"str_replace_missing_file", "memory", map[string]any{"command": "str_replace", "path": "/memories/nope", "old_str": "a", "new_str": "b"},
			"Error: The path /memories/nope does not exist. Please provide a valid path.", true, "", ""},
		{"insert", "memory", map[string]any{"command": "insert", "path": "/memories/todo.md", "insert_line": 1, "insert_text": "- bread"},
			"The file /memories/todo.md has been edited.", false, "todo.md", "- oat milk\n- bread\n- eggs"},
		{"insert_out_of_range", "memory", map[string]any{"command": "insert", "path": "/memories/todo.md", "insert_line": 4, "insert_text": "x"},
			"Error: Invalid `insert_line` parameter: 4. It should be within the range of lines of the file: [0, 3]", true, "", ""},
		{"delete", "memory", map[string]any{"command": "delete", "path": "/memories/plans"}, "Successfully deleted /memories/plans", false, "", ""},
		{"delete_missing", "memory", map[string]any{"command": "delete", "path": "/memories/plans"},
			"Error: The path /memories/plans does not exist. Please provide a valid path.", true, "", ""},
		{"delete_directory", "memory", map[string]any{"command": "delete", "path": "/memories"},
			"Error: /memories is a directory; the delete command needs a file, /memories/<name>", true, "", ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			var r model.ToolResult
			c.do("POST", "/v1/agents/a/tools/"+st.tool, st.args).want(t, http.StatusOK, &r)
			if r.Result != st.want || r.IsError != st.isError {
				t.Errorf("got %q (is_error %v), want %q (is_error %v)", r.Result, r.IsError, st.want, st.isError)
			}
			if st.label != "" {
				if got := value(st.label); got != st.value {
					t.Errorf("block %s = %q, want %q", st.label, got, st.value)
				}
			}
		})
	}

	before := labels()
	refused := "Error: The path %s is not allowed. Paths must be /memories or a file directly in it, /memories/<name> (letters, digits, _ . : -, at most 64 characters)."
	for _, path := range []string{"/memories/../x", "/etc/passwd", "/memories/%2e%2e", "/memories/..", "/memories/.", "/memories/a/b", "memories/x", "/memoriesx", "/memories//x", "/MEMORIES/x"} {
		for _, args := range []map[string]any{
			{"command": "create", "path": path, "file_text": "pwned"},
			{"command": "view", "path": path},
			{"command": "delete", "path": path},
			{"command": "str_replace", "path": path, "old_str": "a", "new_str": "b"},
			{"command": "insert", "path": path, "insert_line": 0, "insert_text": "x"},
		} {
			t.Run("refuses_"+args["command"].(string)+"_"+path, func(t *testing.T) {
				var r model.ToolResult
				c.do("POST", "/v1/agents/a/tools/memory", args).want(t, http.StatusOK, &r)
				if want := fmtString(refused, path); r.Result != want || !r.IsError {
					t.Errorf("got %q (is_error %v), want %q", r.Result, r.IsError, want)
				}
			})
		}
	}
	if after := labels(); len(after) != len(before) {
		t.Errorf("blocks after refused paths: %v, want %v", after, before)
	}

	t.Run("read_only_is_409", func(t *testing.T) {
		c.do("POST", "/v1/agents/a/tools/memory", map[string]any{"command": "delete", "path": "/memories/persona"}).wantProblem(t, http.StatusConflict, "read_only")
		c.do("POST", "/v1/agents/a/tools/memory_rethink", map[string]any{"label": "persona", "new_memory": "x"}).wantProblem(t, http.StatusConflict, "read_only")
		if got := value("persona"); got != "I am Sam." {
			t.Errorf("persona = %q", got)
		}
	})
	t.Run("malformed_is_422", func(t *testing.T) {
		c.do("POST", "/v1/agents/a/tools/memory", map[string]any{"command": "move", "path": "/memories/a"}).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("POST", "/v1/agents/a/tools/memory_replace", map[string]any{"label": "notes", "new_str": "x"}).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	})
	t.Run("other_tenant_is_404", func(t *testing.T) {
		for tool, args := range map[string]map[string]any{
			"memory":             {"command": "create", "path": "/memories/x", "file_text": "x"},
			"memory_rethink":     {"label": "x", "new_memory": "x"},
			"core_memory_append": {"label": "x", "content": "x"},
		} {
			other.do("POST", "/v1/agents/a/tools/"+tool, args).wantProblem(t, http.StatusNotFound, "not_found")
		}
		other.do("POST", "/v1/agents/a/tools/memory", map[string]any{"command": "view", "path": "/memories"}).wantProblem(t, http.StatusNotFound, "not_found")
		if got := labels(); len(got) != len(before) {
			t.Errorf("blocks after the other tenant's calls: %v", got)
		}
	})
}

func fmtString(format, path string) string { return fmt.Sprintf(format, path) }

// TestMemoryToolRename renames blocks with the memory tool through the router,
// on the backend LOGBOOK_TEST_BACKEND names: the value and the history move.
func TestMemoryToolRename(t *testing.T) {
	root := newClient(t)
	c := root.as(mustKey(t, root, "t1", model.ScopeWrite).Key)
	other := root.as(mustKey(t, root, "t2", model.ScopeWrite).Key)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	c.do("PUT", "/v1/agents/a/blocks/draft", map[string]any{"value": "v1"}).want(t, http.StatusCreated, nil)
	c.do("PUT", "/v1/agents/a/blocks/draft", map[string]any{"value": "v2"}).want(t, http.StatusOK, nil)
	c.do("PUT", "/v1/agents/a/blocks/taken", map[string]any{"value": "t"}).want(t, http.StatusCreated, nil)
	c.do("PUT", "/v1/agents/a/blocks/persona", map[string]any{"value": "p", "read_only": true}).want(t, http.StatusCreated, nil)
	rename := func(cl *client, args map[string]any) *response {
		args["command"] = "rename"
		return cl.do("POST", "/v1/agents/a/tools/memory", args)
	}
	tool := func(args map[string]any, want string, isError bool) {
		t.Helper()
		var r model.ToolResult
		rename(c, args).want(t, http.StatusOK, &r)
		if r.Result != want || r.IsError != isError {
			t.Errorf("%v: got %q (is_error %v), want %q (is_error %v)", args, r.Result, r.IsError, want, isError)
		}
	}

	tool(map[string]any{"old_path": "/memories/draft", "new_path": "/memories/final"}, "Successfully renamed /memories/draft to /memories/final", false)
	var b model.Block
	c.do("GET", "/v1/agents/a/blocks/final", nil).want(t, http.StatusOK, &b)
	if b.Value != "v2" || b.Version != 2 {
		t.Errorf("renamed block = %q v%d, want v2 at version 2", b.Value, b.Version)
	}
	c.do("GET", "/v1/agents/a/blocks/draft", nil).wantProblem(t, http.StatusNotFound, "not_found")
	var h struct{ Data []model.Block }
	c.do("GET", "/v1/agents/a/blocks/final/history", nil).want(t, http.StatusOK, &h)
	if len(h.Data) != 2 || h.Data[0].Value != "v2" || h.Data[1].Value != "v1" {
		t.Errorf("history after rename = %+v", h.Data)
	}

	tool(map[string]any{"old_path": "/memories/final", "new_path": "/memories/taken"}, "Error: The destination /memories/taken already exists", true)
	tool(map[string]any{"old_path": "/memories/nope", "new_path": "/memories/x"}, "Error: The path /memories/nope does not exist", true)
	for _, bad := range []map[string]any{
		{"old_path": "/memories/../etc/passwd", "new_path": "/memories/x"},
		{"old_path": "/memories/final", "new_path": "/memories/../x"},
		{"old_path": "/memories/final", "new_path": "/memories/a/b"},
		{"old_path": "/memories/final", "new_path": "/tmp/x"},
		{"old_path": "/memories/final", "new_path": "/memories"},
		{"old_path": "/memories/final"},
	} {
		var r model.ToolResult
		rename(c, bad).want(t, http.StatusOK, &r)
		if !r.IsError {
			t.Errorf("%v: not refused: %q", bad, r.Result)
		}
	}
	c.do("GET", "/v1/agents/a/blocks/final", nil).want(t, http.StatusOK, &b)
	if b.Value != "v2" {
		t.Errorf("final after refused renames = %q", b.Value)
	}
	rename(c, map[string]any{"old_path": "/memories/persona", "new_path": "/memories/p2"}).wantProblem(t, http.StatusConflict, "read_only")
	rename(other, map[string]any{"old_path": "/memories/final", "new_path": "/memories/x"}).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("GET", "/v1/agents/a/blocks/persona", nil).want(t, http.StatusOK, nil)
}
