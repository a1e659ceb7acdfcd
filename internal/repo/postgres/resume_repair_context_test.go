package postgres_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// Resume, repair and the context window, run as one script against both
// backends: SQLite is the reference, so any difference in an answer or an
// error is a bug of the PostgreSQL store. Damage no call of ours can do is
// done with SQL, the same change written in each backend's dialect.

// rrcStore is the part of repo.Store these scripts use.
type rrcStore interface {
	CreateSession(ctx context.Context, tenant string, in model.CreateSession) (model.Session, error)
	UpdateSession(ctx context.Context, tenant, id string, in model.UpdateSession) (model.Session, error)
	CloseSession(ctx context.Context, tenant, id string) (model.Session, error)
	AppendMessages(ctx context.Context, tenant, sessionID string, req model.AppendRequest) (model.AppendResult, error)
	PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error)
	CreateCompaction(ctx context.Context, tenant, sessionID string, in model.CreateCompaction) (model.CompactionResult, error)
	CreateAgent(ctx context.Context, tenant string, in model.CreateAgent) (model.Agent, error)
	PutBlock(ctx context.Context, tenant, agentID, label string, in model.PutBlock, ifMatch *int64) (model.Block, bool, error)
	Resume(ctx context.Context, tenant, sessionID string) (model.Resume, error)
	RepairSession(ctx context.Context, tenant, id string, in model.RepairSession) (model.RepairResult, error)
	Context(ctx context.Context, tenant, id string, q model.ContextQuery) (model.Context, error)
}

// rrcSide is one backend of a pair, with a way to its rows.
type rrcSide struct {
	st   rrcStore
	lite *sql.DB   // SQLite's file, when this is SQLite
	pg   *pgx.Conn // PostgreSQL's database, when this is PostgreSQL
	t    *testing.T
	tr   []string
}

// sql runs the statement written for this backend.
func (s *rrcSide) sql(lite, pg string) {
	s.t.Helper()
	var err error
	if s.lite != nil {
		_, err = s.lite.Exec(lite)
	} else {
		_, err = s.pg.Exec(context.Background(), pg)
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

// must fails the test on a setup step that should not fail.
func (s *rrcSide) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

var (
	rrcIDs   = regexp.MustCompile(`\b(msg_|ses_|ckp_|cmp_|blk_|agt_)[0-9a-f]{32}\b`)
	rrcTimes = regexp.MustCompile(`"(created_at|updated_at|closed_at|repaired_at|started_at)":("[^"]*"|[0-9]+)`)
)

// add records an answer with server-made ids and times masked.
func (s *rrcSide) add(step string, v any, err error) {
	var b []byte
	if err != nil {
		e := model.AsError(err)
		b, _ = json.Marshal(struct {
			Kind   model.Kind
			Code   string
			Msg    string
			Fields []model.FieldError
			Extra  map[string]any
		}{e.Kind, e.Code, e.Msg, e.Fields, e.Extra})
		if e.Kind == model.KindInternal || e.Kind == model.KindUnavailable {
			b = append(b, " cause: "+fmt.Sprint(e.Err)...)
		}
	} else {
		b, _ = json.Marshal(v)
	}
	line := rrcTimes.ReplaceAllString(rrcIDs.ReplaceAllString(string(b), "${1}…"), `"$1":0`)
	s.tr = append(s.tr, step+" → "+line)
}

// runRRCScript runs script on a fresh SQLite store and a fresh PostgreSQL one
// and fails on every step where their answers differ.
func runRRCScript(t *testing.T, script func(s *rrcSide)) {
	t.Helper()
	ctx := context.Background()
	url := mustDatabase(t)
	pg := mustOpenURL(t, url)
	raw, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close(context.Background()) })
	path := filepath.Join(t.TempDir(), "l.db")
	lite, err := sqlite.Open(ctx, sqlite.Config{Path: path, Migrate: true, Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })

	ls := &rrcSide{st: lite, lite: db, t: t}
	ps := &rrcSide{st: pg, pg: raw, t: t}
	script(ls)
	script(ps)
	// RRC_DUMP=1 shows what was compared: two equal answers may both be wrong.
	if os.Getenv("RRC_DUMP") != "" {
		t.Log(strings.Join(ps.tr, "\n"))
	}
	if len(ls.tr) != len(ps.tr) {
		t.Errorf("sqlite answered %d steps, postgres %d", len(ls.tr), len(ps.tr))
	}
	for i := range min(len(ls.tr), len(ps.tr)) {
		if ls.tr[i] != ps.tr[i] {
			t.Errorf("step %d differs:\nsqlite:   %s\npostgres: %s", i, ls.tr[i], ps.tr[i])
		}
		if strings.Contains(ps.tr[i], " cause: ") {
			t.Errorf("step %d: postgres failed unexpectedly: %s", i, ps.tr[i])
		}
	}
}

var _ rrcStore = (*postgres.Store)(nil)

// rrcTurn appends a user message, an assistant tool call and its result.
func rrcTurn(s *rrcSide, session, call string) {
	s.t.Helper()
	_, err := s.st.AppendMessages(context.Background(), "t", session, model.AppendRequest{Batch: true, Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.TextContent("go"), Tokens: 1, Cost: 0.5},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: call, Name: "f", Arguments: "{}"}}, Tokens: 2},
		{Role: model.RoleTool, ToolCallID: &call, Content: model.TextContent("done"), Tokens: 3},
	}})
	s.must(err)
}

func rrcCalls(ids ...string) model.NewMessage {
	m := model.NewMessage{Role: model.RoleAssistant, Tokens: 2}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: id, Name: "tool_" + id, Arguments: `{"q":1}`})
	}
	return m
}

func rrcResult(id string, tokens int64) model.NewMessage {
	return model.NewMessage{Role: model.RoleTool, ToolCallID: &id, Content: model.TextContent("ok " + id), Tokens: tokens}
}

func rrcText(role model.Role, text string, tokens int64) model.NewMessage {
	return model.NewMessage{Role: role, Content: model.TextContent(text), Tokens: tokens}
}

func rrcAppend(s *rrcSide, session string, ms ...model.NewMessage) {
	s.t.Helper()
	_, err := s.st.AppendMessages(context.Background(), "t", session, model.AppendRequest{Messages: ms, Batch: true})
	s.must(err)
}

func rrcCheckpoint(s *rrcSide, session string, it int64, state string) model.Checkpoint {
	s.t.Helper()
	c, err := s.st.PutCheckpoint(context.Background(), "t", session, model.PutCheckpoint{Iteration: it, State: model.JSON(state)}, model.CheckpointRetention{})
	s.must(err)
	return c
}

func rrcSession(s *rrcSide, id string) {
	s.t.Helper()
	_, err := s.st.CreateSession(context.Background(), "t", model.CreateSession{ID: id})
	s.must(err)
}

// rrcResumeAndRepair records a resume, a repair and the resume after it.
func rrcResumeAndRepair(s *rrcSide, step, id string) {
	ctx := context.Background()
	r, err := s.st.Resume(ctx, "t", id)
	s.add(step+": resume", r, err)
	rep, err := s.st.RepairSession(ctx, "t", id, model.RepairSession{})
	s.add(step+": repair", rep, err)
	r, err = s.st.Resume(ctx, "t", id)
	s.add(step+": resume after repair", r, err)
}

func TestResumeMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		breakIt func(s *rrcSide, id string)
	}{
		{"healthy", func(s *rrcSide, id string) {}},
		{"orphan_tool_result", func(s *rrcSide, id string) {
			rrcAppend(s, id, rrcCalls("call_nobody_made"), rrcResult("call_nobody_made", 1))
			s.sql(`UPDATE messages SET tool_calls = NULL WHERE session_id = '`+id+`' AND tool_calls LIKE '%call_nobody_made%'`,
				`UPDATE messages SET tool_calls = NULL WHERE session_id = '`+id+`' AND tool_calls::text LIKE '%call_nobody_made%'`)
		}},
		{"unanswered_tool_call", func(s *rrcSide, id string) {
			rrcAppend(s, id, rrcCalls("call_b", "call_a"), rrcResult("call_a", 1), rrcCalls("call_c"))
		}},
		{"unanswered_but_pending", func(s *rrcSide, id string) {
			rrcAppend(s, id, rrcCalls("call_p", "call_q"))
			rrcCheckpoint(s, id, 1, `{"pending_tool_calls":[{"id":"call_p","tool_name":"tool_call_p","tool_input":{"q":1}}]}`)
			rrcAppend(s, id, rrcText(model.RoleUser, "and now?", 4))
		}},
		{"seq_gap", func(s *rrcSide, id string) {
			s.sql(`DELETE FROM messages WHERE session_id = '`+id+`' AND seq = 1`, `DELETE FROM messages WHERE session_id = '`+id+`' AND seq = 1`)
			s.sql(`UPDATE sessions SET message_count = 2, total_tokens = 5, total_cost = 0, turn_count = 0 WHERE id = '`+id+`'`,
				`UPDATE sessions SET message_count = 2, total_tokens = 5, total_cost = 0, turn_count = 0 WHERE id = '`+id+`'`)
		}},
		{"counter_mismatch", func(s *rrcSide, id string) {
			s.sql(`UPDATE sessions SET total_tokens = 999 WHERE id = '`+id+`'`, `UPDATE sessions SET total_tokens = 999 WHERE id = '`+id+`'`)
		}},
		{"turn_count", func(s *rrcSide, id string) {
			s.sql(`UPDATE sessions SET turn_count = 7 WHERE id = '`+id+`'`, `UPDATE sessions SET turn_count = 7 WHERE id = '`+id+`'`)
		}},
		{"checkpoint_ahead", func(s *rrcSide, id string) {
			c := rrcCheckpoint(s, id, 1, `{}`)
			h := ckstate.Hash(1, 9, c.State)
			s.sql(`UPDATE checkpoints SET last_seq = 9, sha256 = '`+h+`' WHERE session_id = '`+id+`'`,
				`UPDATE checkpoints SET last_seq = 9, sha256 = '`+h+`' WHERE session_id = '`+id+`'`)
		}},
		{"checkpoint_corrupted", func(s *rrcSide, id string) {
			rrcCheckpoint(s, id, 1, `{"stop_reason":"tool_use","pending_tool_calls":[]}`)
			s.sql(`UPDATE checkpoints SET state = '{"stop_reason":"end_turn"}' WHERE session_id = '`+id+`'`,
				`UPDATE checkpoints SET state = '{"stop_reason":"end_turn"}' WHERE session_id = '`+id+`'`)
		}},
		{"checkpoint_unreadable", func(s *rrcSide, id string) {
			rrcCheckpoint(s, id, 1, `{"a":1}`)
			s.sql(`UPDATE checkpoints SET codec = 'zstd', body = x'00ff' WHERE session_id = '`+id+`'`,
				`UPDATE checkpoints SET codec = 'zstd', body = '\x00ff'::bytea WHERE session_id = '`+id+`'`)
		}},
		{"schema_version_newer", func(s *rrcSide, id string) {
			rrcCheckpoint(s, id, 1, fmt.Sprintf(`{"schema_version":%d}`, model.SchemaVersion+1))
		}},
		{"messages_since_checkpoint", func(s *rrcSide, id string) {
			rrcCheckpoint(s, id, 1, `{"schema_version":1}`)
			var ms []model.NewMessage
			for i := range model.ResumeMessageLimit + 5 {
				ms = append(ms, rrcText(model.RoleAssistant, fmt.Sprint("m", i), 1))
			}
			for len(ms) > 0 {
				k := min(len(ms), model.MaxBatch)
				rrcAppend(s, id, ms[:k]...)
				ms = ms[k:]
			}
		}},
		{"several_at_once", func(s *rrcSide, id string) {
			rrcAppend(s, id, rrcCalls("call_open"))
			s.sql(`UPDATE sessions SET total_cost = 42, turn_count = 0 WHERE id = '`+id+`'`,
				`UPDATE sessions SET total_cost = 42, turn_count = 0 WHERE id = '`+id+`'`)
			rrcCheckpoint(s, id, 3, fmt.Sprintf(`{"schema_version":%d}`, model.SchemaVersion+1))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runRRCScript(t, func(s *rrcSide) {
				rrcSession(s, "s")
				rrcTurn(s, "s", "call_1")
				tc.breakIt(s, "s")
				rrcResumeAndRepair(s, tc.name, "s")
			})
		})
	}
	t.Run("missing", func(t *testing.T) {
		runRRCScript(t, func(s *rrcSide) {
			r, err := s.st.Resume(ctx, "t", "nope")
			s.add("resume a missing session", r, err)
			rrcSession(s, "s")
			r, err = s.st.Resume(ctx, "other", "s")
			s.add("resume in another tenant", r, err)
			r, err = s.st.Resume(ctx, "t", "s")
			s.add("resume an empty session", r, err)
		})
	})
}

func TestRepairMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	runRRCScript(t, func(s *rrcSide) {
		rrcSession(s, "s")
		rrcTurn(s, "s", "call_1")
		rrcAppend(s, "s", rrcText(model.RoleUser, "more", 1), rrcCalls("call_z", "call_y"), rrcResult("call_y", 2),
			rrcText(model.RoleUser, "again", 1), rrcCalls("call_w"))
		s.sql(`UPDATE sessions SET turn_count = 0 WHERE id = 's'`, `UPDATE sessions SET turn_count = 0 WHERE id = 's'`)

		rep, err := s.st.RepairSession(ctx, "t", "s", model.RepairSession{ExpectedLastSeq: sesMsgPtr(int64(3))})
		s.add("stale fence", rep, err)
		rep, err = s.st.RepairSession(ctx, "t", "nope", model.RepairSession{})
		s.add("missing session", rep, err)
		rep, err = s.st.RepairSession(ctx, "t", "s", model.RepairSession{ExpectedLastSeq: sesMsgPtr(int64(8))})
		s.add("repair", rep, err)
		rep, err = s.st.RepairSession(ctx, "t", "s", model.RepairSession{})
		s.add("repair again: nothing to do", rep, err)
		r, err := s.st.Resume(ctx, "t", "s")
		s.add("resume after", r, err)
		res, err := s.st.AppendMessages(ctx, "t", "s", model.AppendRequest{Messages: []model.NewMessage{rrcResult("call_w", 1)}})
		s.add("a late result for a repaired call", res, err)

		// An orphan is left alone and reported; the call beside it is repaired.
		rrcSession(s, "o")
		rrcAppend(s, "o", rrcCalls("call_gone"), rrcResult("call_gone", 1), rrcCalls("call_open"))
		s.sql(`UPDATE messages SET tool_calls = NULL WHERE session_id = 'o' AND seq = 1`,
			`UPDATE messages SET tool_calls = NULL WHERE session_id = 'o' AND seq = 1`)
		rep, err = s.st.RepairSession(ctx, "t", "o", model.RepairSession{})
		s.add("orphan reported, call repaired", rep, err)
		rep, err = s.st.RepairSession(ctx, "t", "o", model.RepairSession{})
		s.add("orphan still reported", rep, err)

		// Pending calls are the runtime's to answer.
		rrcSession(s, "p")
		rrcAppend(s, "p", rrcCalls("call_p", "call_q"))
		rrcCheckpoint(s, "p", 2, `{"pending_tool_calls":[{"id":"call_q","tool_name":"tool_call_q"}]}`)
		rep, err = s.st.RepairSession(ctx, "t", "p", model.RepairSession{})
		s.add("pending call left alone", rep, err)

		// A closed session refuses; reopened, it repairs.
		rrcSession(s, "c")
		rrcAppend(s, "c", rrcCalls("call_c"))
		_, err = s.st.CloseSession(ctx, "t", "c")
		s.must(err)
		rep, err = s.st.RepairSession(ctx, "t", "c", model.RepairSession{})
		s.add("closed", rep, err)
		_, err = s.st.UpdateSession(ctx, "t", "c", model.UpdateSession{Status: model.Optional[model.Status]{Set: true, Value: model.StatusActive}})
		s.must(err)
		rep, err = s.st.RepairSession(ctx, "t", "c", model.RepairSession{ExpectedLastSeq: sesMsgPtr(int64(1))})
		s.add("reopened", rep, err)

		// A fork inherits its parent's open call: the result is the fork's.
		rrcSession(s, "parent")
		rrcAppend(s, "parent", rrcText(model.RoleUser, "hi", 1), rrcCalls("call_f"), rrcResult("call_f", 1), rrcCalls("call_g"))
		rrcFork(s, "parent", "fork", 4)
		rep, err = s.st.RepairSession(ctx, "t", "fork", model.RepairSession{})
		s.add("fork repaired", rep, err)
		r, err = s.st.Resume(ctx, "t", "parent")
		s.add("parent untouched", r, err)
		r, err = s.st.Resume(ctx, "t", "fork")
		s.add("fork resumed", r, err)
	})
}

// rrcFork makes id a fork of parent at seq at, sharing its prefix, as
// ForkSession stores one: by SQL, since PostgreSQL's ForkSession is written
// elsewhere, and the same rows on both backends.
func rrcFork(s *rrcSide, parent, id string, at int64) {
	s.t.Helper()
	q := `INSERT INTO sessions (tenant_id, id, status, metadata, message_count, last_seq, total_tokens, total_cost,
		turn_count, parent_id, forked_at_seq, prefix_shared, created_at, updated_at)
		SELECT tenant_id, '` + id + `', 'created', '{}', seq, seq, cum_tokens, cum_cost, cum_turns, session_id, seq, 1, 1, 1
		FROM messages WHERE tenant_id = 't' AND session_id = '` + parent + `' AND seq = ` + fmt.Sprint(at)
	s.sql(q, q)
}

func TestContextMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	runRRCScript(t, func(s *rrcSide) {
		window := func(step, id string, q model.ContextQuery) {
			c, err := s.st.Context(ctx, "t", id, q)
			s.add(step, c, err)
		}
		budgets := []int64{0, 1, 5, 9, 10, 11, 12, 20, 25, 30, 40, 60, 1000}
		sweep := func(step, id string) {
			window(step+": everything", id, model.ContextQuery{})
			for _, b := range budgets {
				window(fmt.Sprintf("%s: max_tokens=%d", step, b), id, model.ContextQuery{MaxTokens: &b})
			}
		}
		window("missing", "nope", model.ContextQuery{})
		rrcSession(s, "s")
		sweep("empty", "s")
		rrcAppend(s, "s",
			rrcText(model.RoleSystem, "be brief", 4),
			rrcText(model.RoleUser, "q1", 3),
			rrcCalls("c1", "c2"),
			rrcResult("c1", 5),
			rrcResult("c2", 6),
			rrcText(model.RoleAssistant, "a1", 2),
			rrcText(model.RoleDeveloper, "use metric", 3),
			rrcText(model.RoleUser, "q2", 3),
			rrcCalls("c3"),
			rrcResult("c3", 7),
			rrcText(model.RoleAssistant, "a2", 2))
		sweep("tools and systems", "s")

		// Every chunk size a guess can take: a session of many small messages.
		rrcSession(s, "long")
		var ms []model.NewMessage
		ms = append(ms, rrcText(model.RoleSystem, "sys", 10))
		for i := range 300 {
			call := fmt.Sprint("k", i)
			ms = append(ms, rrcText(model.RoleUser, "u", 1), rrcCalls(call), rrcResult(call, int64(1+i%7)))
		}
		rrcAppend(s, "long", ms...)
		for _, b := range []int64{10, 11, 50, 200, 333, 700, 1200, 5000} {
			window(fmt.Sprintf("long: max_tokens=%d", b), "long", model.ContextQuery{MaxTokens: &b})
		}

		_, err := s.st.CreateCompaction(ctx, "t", "s", model.CreateCompaction{ThroughSeq: 4,
			Summary: model.TextContent("asked q1, called c1 and c2"), Tokens: 6})
		s.must(err)
		sweep("compacted", "s")
		_, err = s.st.CreateCompaction(ctx, "t", "s", model.CreateCompaction{ThroughSeq: 9, Summary: model.TextContent("big"), Tokens: 50})
		s.must(err)
		sweep("compaction over budget", "s")

		// Blocks, in bytewise label order.
		_, err = s.st.CreateAgent(ctx, "t", model.CreateAgent{ID: "ag", Name: "agent"})
		s.must(err)
		for _, label := range []string{"persona", "Human", "_notes", "a-b"} {
			_, _, err := s.st.PutBlock(ctx, "t", "ag", label, model.PutBlock{Value: "v " + label, Limit: 100}, nil)
			s.must(err)
		}
		_, err = s.st.CreateSession(ctx, "t", model.CreateSession{ID: "withagent", AgentID: sesMsgPtr("ag")})
		s.must(err)
		rrcAppend(s, "withagent", rrcText(model.RoleUser, "hello", 2))
		b := int64(1)
		window("blocks", "withagent", model.ContextQuery{IncludeBlocks: true})
		window("blocks within a budget", "withagent", model.ContextQuery{IncludeBlocks: true, MaxTokens: &b})
		window("blocks without an agent", "s", model.ContextQuery{IncludeBlocks: true})

		// A fork reads its parent's prefix as its own, with its own messages.
		rrcSession(s, "p")
		rrcAppend(s, "p",
			rrcText(model.RoleSystem, "parent sys", 4),
			rrcText(model.RoleUser, "q1", 3),
			rrcCalls("f1"),
			rrcResult("f1", 5),
			rrcText(model.RoleAssistant, "a1", 2),
			rrcText(model.RoleUser, "parent only", 9))
		rrcFork(s, "p", "f", 5)
		rrcAppend(s, "f", rrcText(model.RoleDeveloper, "fork dev", 2), rrcText(model.RoleUser, "fork q", 3),
			rrcCalls("f2"), rrcResult("f2", 4), rrcText(model.RoleAssistant, "fork a", 2))
		rrcFork(s, "f", "ff", 8)
		rrcAppend(s, "ff", rrcText(model.RoleAssistant, "grandchild", 1))
		sweep("fork", "f")
		sweep("fork of a fork", "ff")
		_, err = s.st.CreateCompaction(ctx, "t", "f", model.CreateCompaction{ThroughSeq: 3, Summary: model.TextContent("forked"), Tokens: 1})
		s.must(err)
		sweep("compacted fork", "f")
		r, err := s.st.Resume(ctx, "t", "ff")
		s.add("resume a fork of a fork", r, err)
	})
}

// BenchmarkContextPG is SQLite's BenchmarkContext on PostgreSQL: the context
// of a 10,000-message session (a system prompt, then user/assistant turns with
// tool calls, 40 tokens a message) for a budget that holds ~100 messages.
func BenchmarkContextPG(b *testing.B) {
	ctx := context.Background()
	s := mustOpen(b)
	ses, err := s.CreateSession(ctx, "t", model.CreateSession{})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	msgs := []model.NewMessage{{Role: model.RoleSystem, Content: model.TextContent("You are a careful assistant."), Tokens: 40}}
	for i := 2; len(msgs) < n; i++ {
		call := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("question %d about the order", i)), Tokens: 40},
			model.NewMessage{Role: model.RoleAssistant, Tokens: 40, ToolCalls: []model.ToolCall{{ID: call, Name: "lookup", Arguments: `{"q":1}`}}},
			model.NewMessage{Role: model.RoleTool, ToolCallID: &call, Content: model.TextContent(`{"status":"ok"}`), Tokens: 40},
			model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent(fmt.Sprintf("answer %d", i)), Tokens: 40})
	}
	for len(msgs) > 0 {
		k := min(len(msgs), model.MaxBatch)
		if _, err := s.AppendMessages(ctx, "t", ses.ID, model.AppendRequest{Messages: msgs[:k]}); err != nil {
			b.Fatal(err)
		}
		msgs = msgs[k:]
	}
	budget := int64(4000)
	b.Run("max_tokens=4000", func(b *testing.B) {
		for b.Loop() {
			c, err := s.Context(ctx, "t", ses.ID, model.ContextQuery{MaxTokens: &budget})
			if err != nil || len(c.Messages) < 90 {
				b.Fatalf("%d messages, %v", len(c.Messages), err)
			}
		}
	})
}
