// Package history checks a session's stored history the same way on every
// backend: each backend reads the rows in seq order and feeds them here, so
// that what resume and repair report cannot drift between SQLite and
// PostgreSQL.
package history

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/logbook/logbook/internal/model"
)

// Row is what the checks need of one stored message.
type Row struct {
	Seq        int64
	Role       model.Role
	ToolCalls  []byte  // the stored JSON; nil when the message made no call
	ToolCallID *string // a tool result's call
	Tokens     int64
	Cost       float64
}

// Call is a tool call with no result that no checkpoint lists as pending.
type Call struct {
	ID, Name string
	Seq      int64
}

// Result is what Checker found.
type Result struct {
	Problems, Warnings []model.ResumeProblem
	Unanswered         []Call // in seq order
	Turns              int64  // user messages in the rows
}

// Checker walks a whole history once, a row at a time in seq order: seqs must
// run 1..last_seq with no gap, the counters must equal the rows, every tool
// result must answer an earlier call, and every call must be answered or
// listed as pending by the checkpoint.
type Checker struct {
	res                   Result
	expect, count, tokens int64
	cost                  float64
	calls                 map[string]Call // until answered
	clientSide            map[string]bool // calls the client runs, until answered
}

// NewChecker starts a walk at seq 1.
func NewChecker() *Checker {
	return &Checker{
		res:        Result{Problems: []model.ResumeProblem{}, Warnings: []model.ResumeProblem{}},
		expect:     1,
		calls:      map[string]Call{},
		clientSide: map[string]bool{},
	}
}

func (c *Checker) report(code string, seq int64, format string, args ...any) {
	p := model.ResumeProblem{Code: code, Detail: fmt.Sprintf(format, args...)}
	if seq > 0 {
		p.Seq = &seq
	}
	c.res.Problems = append(c.res.Problems, p)
}

// Add checks the next row.
func (c *Checker) Add(r Row) {
	if r.Seq != c.expect {
		c.report(model.ProblemSeqGap, r.Seq, "expected seq %d, found %d", c.expect, r.Seq)
	}
	c.expect = r.Seq + 1
	c.count, c.tokens, c.cost = c.count+1, c.tokens+r.Tokens, c.cost+r.Cost
	if r.Role == model.RoleUser {
		c.res.Turns++
	}
	if r.ToolCalls != nil {
		var tcs []model.ToolCall
		// Calls that cannot be read are no calls: the result that answers
		// one is then reported as an orphan, which is what a runtime sees.
		if json.Unmarshal(r.ToolCalls, &tcs) == nil {
			for _, tc := range tcs {
				if tc.ClientSide {
					// The client runs it: its result comes when the client
					// has it, and no checkpoint can know when.
					c.clientSide[tc.ID] = true
					continue
				}
				c.calls[tc.ID] = Call{ID: tc.ID, Name: tc.Name, Seq: r.Seq}
			}
		}
	}
	if r.Role == model.RoleTool && r.ToolCallID != nil {
		id := *r.ToolCallID
		if c.clientSide[id] {
			delete(c.clientSide, id)
			return
		}
		if _, ok := c.calls[id]; !ok {
			c.report(model.ProblemOrphanToolResult, r.Seq, "tool result for call %q matches no earlier assistant tool call "+
				"(or a second result for it): rewind to seq %d to drop it and what followed, or fork at seq %d to keep this session as it is",
				id, r.Seq-1, r.Seq-1)
		}
		delete(c.calls, id)
	}
}

// Finish ends the walk: calls still open that pending does not list are
// unanswered, and the rows are compared with the session's counters.
func (c *Checker) Finish(ses model.Session, pending []model.PendingToolCall) Result {
	for _, p := range pending {
		delete(c.calls, p.ID)
	}
	for _, call := range c.calls {
		c.res.Unanswered = append(c.res.Unanswered, call)
	}
	// Map order is random: the report must read the same on every run.
	slices.SortFunc(c.res.Unanswered, func(a, b Call) int { return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID)) })
	for _, call := range c.res.Unanswered {
		c.report(model.ProblemUnansweredToolCall, call.Seq, "tool call %q has no result and is not pending in the checkpoint", call.ID)
	}
	last := c.expect - 1
	if c.count != ses.MessageCount || last != ses.LastSeq || c.tokens != ses.TotalTokens ||
		math.Abs(c.cost-ses.TotalCost) > 1e-9*max(1, math.Abs(c.cost)) {
		c.report(model.ProblemCounterMismatch, 0, "the rows hold %d messages up to seq %d with %d tokens and cost %v; the session says %d, %d, %d, %v",
			c.count, last, c.tokens, c.cost, ses.MessageCount, ses.LastSeq, ses.TotalTokens, ses.TotalCost)
	}
	if c.res.Turns != ses.TurnCount {
		c.res.Warnings = append(c.res.Warnings, model.ResumeProblem{Code: model.ProblemTurnCountMismatch,
			Detail: fmt.Sprintf("the rows hold %d user messages; the session's turn_count says %d", c.res.Turns, ses.TurnCount)})
	}
	return c.res
}
