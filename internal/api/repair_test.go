package api_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// follow sends a problem's suggested repair as it stands, the way a runtime
// acting on the report would.
func follow(t *testing.T, c *client, r model.Repair) *response {
	t.Helper()
	if r.Method == nil || r.Path == nil {
		t.Fatalf("repair %+v is not a request", r)
	}
	body := any(r.Body)
	if r.Body == nil {
		body = nil
	}
	return c.do(*r.Method, *r.Path, body)
}

func mustRepair(t *testing.T, c *client, session string, body any) model.RepairResult {
	t.Helper()
	var res model.RepairResult
	c.do("POST", "/v1/sessions/"+session+"/repair", body).want(t, http.StatusOK, &res)
	return res
}

// A crash between a tool call and its result leaves a call nobody will answer:
// resume says so and how to fix it; the repair answers it as interrupted, once.
func TestRepairAnswersInterruptedCalls(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	mustAppend(t, c, "s", userMsg("book a table and check the weather"))
	mustAppend(t, c, "s", map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{
		{"id": "call_a", "name": "book", "arguments": `{}`}, {"id": "call_b", "name": "weather", "arguments": `{}`}}})
	mustAppend(t, c, "s", map[string]any{"role": "tool", "tool_call_id": "call_a", "content": "booked"})
	mustAppend(t, c, "s", map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{
		{"id": "call_c", "name": "search", "arguments": `{}`}}})
	// The checkpoint says call_c is still running: it is not the repair's to answer.
	putCheckpoint(c, "s", 1, nil, pending("call_c")).want(t, http.StatusCreated, nil)

	r := mustResume(t, c, "s")
	if r.Validation.OK || len(r.Validation.Problems) != 1 || len(r.Validation.Warnings) != 0 {
		t.Fatalf("resume: %s", mustJSON(t, r.Validation))
	}
	p := r.Validation.Problems[0]
	if p.Code != model.ProblemUnansweredToolCall || *p.Seq != 2 || !p.Repair.Automatic ||
		p.Repair.Action != model.RepairInterruptedResult || *p.Repair.Path != "/v1/sessions/s/repair" {
		t.Fatalf("problem %s", mustJSON(t, p))
	}
	var res model.RepairResult
	follow(t, c, p.Repair).want(t, http.StatusOK, &res)
	if len(res.Repaired) != 1 || len(res.Messages) != 1 || len(res.Unrepaired) != 0 || res.Session.LastSeq != 5 {
		t.Fatalf("repair: %s", mustJSON(t, res))
	}
	m := res.Messages[0]
	if m.Seq != 5 || m.Role != model.RoleTool || *m.ToolCallID != "call_b" || !m.IsError || *m.Name != "weather" ||
		!strings.Contains(m.Content.Text, "interrupted") || !strings.Contains(m.Metadata.String(), `"logbook_repair"`) {
		t.Errorf("appended %s", mustJSON(t, m))
	}
	if r := mustResume(t, c, "s"); !r.Validation.OK || len(r.PendingToolCalls) != 1 {
		t.Errorf("resume after repair: %s", mustJSON(t, r.Validation))
	}
	// Idempotent: nothing more to do, nothing appended.
	if again := mustRepair(t, c, "s", map[string]any{}); len(again.Repaired) != 0 || len(again.Messages) != 0 || again.Session.LastSeq != 5 {
		t.Errorf("second repair: %s", mustJSON(t, again))
	}
	// The call's real result, should it come now, is a duplicate.
	c.do("POST", "/v1/sessions/s/messages", map[string]any{"role": "tool", "tool_call_id": "call_b", "content": "sunny"}).
		wantProblem(t, http.StatusConflict, "duplicate_tool_result")

	c.do("POST", "/v1/sessions/s/repair", map[string]any{"expected_last_seq": 4}).wantProblem(t, http.StatusConflict, "stale_seq")
	c.do("POST", "/v1/sessions/s/repair", map[string]any{"expected_last_seq": -1}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	c.do("POST", "/v1/sessions/s/repair", map[string]any{"mode": "all"}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	c.do("POST", "/v1/sessions/s/repair", map[string]any{}, "Idempotency-Key", strings.Repeat("k", 256)).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	c.do("POST", "/v1/sessions/nope/repair", map[string]any{}).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("DELETE", "/v1/sessions/s", nil).want(t, http.StatusOK, nil)
	c.do("POST", "/v1/sessions/s/repair", map[string]any{}).wantProblem(t, http.StatusConflict, "session_closed")
}

// What the repair may not decide (an orphan result came in through an import)
// it reports with a suggestion; following it clears the report.
func TestRepairLeavesOrphansToTheRuntime(t *testing.T) {
	src := newClient(t)
	mustCreateSession(t, src, map[string]any{"id": "o"})
	mustAppend(t, src, "o", userMsg("hi"))
	mustAppend(t, src, "o", map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{
		{"id": "call_1", "name": "lookup", "arguments": `{}`}}})
	mustAppend(t, src, "o", map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "found"})
	mustAppend(t, src, "o", map[string]any{"role": "assistant", "content": "done"})
	lines := splitLines(t, mustExport(t, src, "o"))
	lines[3] = []byte(strings.Replace(string(lines[3]), `"tool_call_id":"call_1"`, `"tool_call_id":"ghost"`, 1))

	c := newClient(t)
	mustImport(t, c, reseal(t, lines), "")
	r := mustResume(t, c, "o")
	var orphan *model.ResumeProblem
	for i, p := range r.Validation.Problems {
		if p.Code == model.ProblemOrphanToolResult {
			orphan = &r.Validation.Problems[i]
		}
	}
	if orphan == nil || *orphan.Seq != 3 || orphan.Repair.Automatic || orphan.Repair.Action != model.RepairRewind ||
		orphan.Repair.Body["to_seq"] != float64(2) || !strings.Contains(orphan.Detail, "fork at seq 2") {
		t.Fatalf("problems %s", mustJSON(t, r.Validation.Problems))
	}
	res := mustRepair(t, c, "o", map[string]any{"expected_last_seq": 4})
	var codes []string
	for _, p := range res.Unrepaired {
		codes = append(codes, p.Code)
	}
	// call_1 has no result now: the repair answers it; the orphan stays.
	if len(res.Messages) != 1 || *res.Messages[0].ToolCallID != "call_1" || strings.Join(codes, ",") != model.ProblemOrphanToolResult {
		t.Fatalf("repair: %s", mustJSON(t, res))
	}
	orphanNow := res.Unrepaired[0]
	follow(t, c, orphanNow.Repair).want(t, http.StatusOK, nil)
	// The rewind took the interrupted result with it: call_1 is open again,
	// and the automatic repair closes it.
	r = mustResume(t, c, "o")
	if len(r.Validation.Problems) != 1 || r.Validation.Problems[0].Code != model.ProblemUnansweredToolCall || r.Session.LastSeq != 2 {
		t.Fatalf("after the suggested rewind: %s", mustJSON(t, r.Validation))
	}
	follow(t, c, r.Validation.Problems[0].Repair).want(t, http.StatusOK, nil)
	if r := mustResume(t, c, "o"); !r.Validation.OK || r.Session.LastSeq != 3 {
		t.Errorf("after the repairs: %s", mustJSON(t, r.Validation))
	}
}

// turn_count is kept in the appends' transaction; when the rows disagree (an
// older build, a hand edit), resume warns and the repair recounts.
func TestTurnCountWarningAndRecount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	c := newClient(t, withDB(path))
	mustCreateSession(t, c, map[string]any{"id": "t"})
	for _, m := range []map[string]any{userMsg("one"), {"role": "assistant", "content": "a"}, userMsg("two")} {
		mustAppend(t, c, "t", m)
	}
	if s := mustGetSession(t, c, "t"); s.TurnCount != 2 {
		t.Fatalf("turn_count %d, want 2", s.TurnCount)
	}
	if _, err := mustRawDB(t, path).Exec(`UPDATE sessions SET turn_count = 7 WHERE id = 't'`); err != nil {
		t.Fatal(err)
	}
	r := mustResume(t, c, "t")
	if !r.Validation.OK || len(r.Validation.Warnings) != 1 || r.Validation.Warnings[0].Code != model.ProblemTurnCountMismatch ||
		r.Validation.Warnings[0].Repair.Action != model.RepairRecountTurns {
		t.Fatalf("validation %s", mustJSON(t, r.Validation))
	}
	res := mustRepair(t, c, "t", map[string]any{})
	if res.Session.TurnCount != 2 || len(res.Repaired) != 1 || res.Repaired[0].Code != model.ProblemTurnCountMismatch {
		t.Errorf("repair %s", mustJSON(t, res))
	}
	if r := mustResume(t, c, "t"); len(r.Validation.Warnings) != 0 {
		t.Errorf("warnings after the recount: %s", mustJSON(t, r.Validation.Warnings))
	}
}
