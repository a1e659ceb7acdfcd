package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// turn appends a user message, an assistant tool call and its result.
func turn(t *testing.T, s *Store, session, call string) {
	t.Helper()
	_, err := s.AppendMessages(context.Background(), "t", session, model.AppendRequest{Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.TextContent("go"), Tokens: 1},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: call, Name: "f", Arguments: "{}"}}, Tokens: 2},
		{Role: model.RoleTool, ToolCallID: &call, Content: model.TextContent("done"), Tokens: 3},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func mustCheckpoint(t *testing.T, s *Store, session string, it int64, state string) model.Checkpoint {
	t.Helper()
	c, err := s.PutCheckpoint(context.Background(), "t", session, model.PutCheckpoint{Iteration: it, State: model.JSON(state)}, model.CheckpointRetention{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Each broken session is made by hand, with SQL a bug or a bad restore might
// leave behind, and resume must name exactly its problem.
func TestResumeFindsEachProblem(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		code    string
		breakIt func(t *testing.T, s *Store, id string)
	}{
		{"orphan_tool_result", func(t *testing.T, s *Store, id string) {
			// Appends refuse an orphan result; a restore of a damaged copy can
			// still leave one: the call's record gone from its assistant message.
			call := "call_nobody_made"
			if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: []model.NewMessage{
				{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: call, Name: "f", Arguments: "{}"}}},
				{Role: model.RoleTool, ToolCallID: &call, Content: model.TextContent("?")}}}); err != nil {
				t.Fatal(err)
			}
			s.mustExec(t, `UPDATE messages SET tool_calls = NULL WHERE session_id = ? AND tool_calls LIKE '%call_nobody_made%'`, id)
		}},
		{"unanswered_tool_call", func(t *testing.T, s *Store, id string) {
			if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: []model.NewMessage{
				{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_lost", Name: "f", Arguments: "{}"}}}}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"seq_gap", func(t *testing.T, s *Store, id string) {
			s.mustExec(t, `DELETE FROM messages WHERE session_id = ? AND seq = 1`, id)
			s.mustExec(t, `UPDATE sessions SET message_count = 2, total_tokens = 5 WHERE id = ?`, id)
		}},
		{"counter_mismatch", func(t *testing.T, s *Store, id string) {
			s.mustExec(t, `UPDATE sessions SET total_tokens = 999 WHERE id = ?`, id)
		}},
		{"checkpoint_ahead", func(t *testing.T, s *Store, id string) {
			c := mustCheckpoint(t, s, id, 1, `{}`)
			// a checkpoint written against a newer copy of the session, restored beside an older one
			c.LastSeq = 9
			s.mustExec(t, `UPDATE checkpoints SET last_seq = 9, sha256 = ? WHERE id = ?`, checkpointHash(1, 9, c.State), c.ID)
		}},
		{"checkpoint_corrupted", func(t *testing.T, s *Store, id string) {
			c := mustCheckpoint(t, s, id, 1, `{"stop_reason":"tool_use"}`)
			s.mustExec(t, `UPDATE checkpoints SET state = '{"stop_reason":"end_turn"}' WHERE id = ?`, c.ID)
		}},
		{"schema_version_newer", func(t *testing.T, s *Store, id string) {
			mustCheckpoint(t, s, id, 1, fmt.Sprintf(`{"schema_version":%d}`, model.SchemaVersion+1))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			s := mustOpen(t)
			if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
				t.Fatal(err)
			}
			turn(t, s, "s", "call_1")
			if r, err := s.Resume(ctx, "t", "s"); err != nil || !r.Validation.OK {
				t.Fatalf("healthy session: %v %+v", err, r.Validation)
			}
			tc.breakIt(t, s, "s")
			broken := dump(t, s)
			r, err := s.Resume(ctx, "t", "s")
			if err != nil {
				t.Fatal(err)
			}
			if r.Validation.OK || len(r.Validation.Problems) != 1 || r.Validation.Problems[0].Code != tc.code {
				t.Fatalf("problems %+v, want exactly one %s", r.Validation.Problems, tc.code)
			}
			if dump(t, s) != broken {
				t.Error("resume changed the session")
			}
		})
	}
}

func (s *Store) mustExec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := s.wdb.Exec(q, args...); err != nil {
		t.Fatal(err)
	}
}

// dump renders every row that resume could touch.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{`SELECT id, message_count, last_seq, total_tokens, status, updated_at FROM sessions ORDER BY id`,
		`SELECT session_id, seq, id FROM messages ORDER BY session_id, seq`,
		`SELECT id, iteration, state, last_seq, sha256 FROM checkpoints ORDER BY id`} {
		rows, err := s.rdb.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
	}
	return b.String()
}

func TestCorruptedCheckpointIsReported(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	c := mustCheckpoint(t, s, "s", 1, `{"a":1}`)
	s.mustExec(t, `UPDATE checkpoints SET state = '{"a":2}' WHERE id = ?`, c.ID)
	for name, read := range map[string]func() error{
		"latest": func() error { _, err := s.GetCheckpoint(ctx, "t", "s", 0); return err },
		"by_it":  func() error { _, err := s.GetCheckpoint(ctx, "t", "s", 1); return err },
		"list":   func() error { _, err := s.ListCheckpoints(ctx, "t", "s", repo.PageRequest{}); return err },
	} {
		e := model.AsError(read())
		if e.Code != "corrupted" || e.Extra["id"] != c.ID {
			t.Errorf("%s: %v, want corrupted naming %s", name, e, c.ID)
		}
	}
}
