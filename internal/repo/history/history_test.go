package history

import (
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// The walk's report must not depend on map order, and a pending call is the
// runtime's, not a problem.
func TestCheckerReportsInSeqOrder(t *testing.T) {
	ptr := func(s string) *string { return &s }
	c := NewChecker()
	c.Add(Row{Seq: 1, Role: model.RoleUser, Tokens: 1, Cost: 0.1})
	c.Add(Row{Seq: 2, Role: model.RoleAssistant, ToolCalls: []byte(`[{"id":"b","name":"f"},{"id":"a","name":"g"},{"id":"p","name":"h"}]`)})
	c.Add(Row{Seq: 4, Role: model.RoleTool, ToolCallID: ptr("zz")}) // a gap, and an orphan
	c.Add(Row{Seq: 5, Role: model.RoleAssistant, ToolCalls: []byte(`not json`)})
	res := c.Finish(model.Session{MessageCount: 4, LastSeq: 5, TotalTokens: 1, TotalCost: 0.1, TurnCount: 2},
		[]model.PendingToolCall{{ID: "p"}})
	var codes []string
	for _, p := range res.Problems {
		codes = append(codes, p.Code)
	}
	want := []string{model.ProblemSeqGap, model.ProblemOrphanToolResult, model.ProblemUnansweredToolCall, model.ProblemUnansweredToolCall}
	if len(codes) != len(want) {
		t.Fatalf("problems %v, want %v", codes, want)
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("problems %v, want %v", codes, want)
		}
	}
	if len(res.Unanswered) != 2 || res.Unanswered[0].ID != "a" || res.Unanswered[1].ID != "b" || res.Unanswered[0].Name != "g" {
		t.Errorf("unanswered %+v, want a then b", res.Unanswered)
	}
	if res.Turns != 1 || len(res.Warnings) != 1 || res.Warnings[0].Code != model.ProblemTurnCountMismatch {
		t.Errorf("turns %d, warnings %+v", res.Turns, res.Warnings)
	}
}
