package model

import "strconv"

// The resume problems' codes. Warnings (TurnCountMismatch) do not make
// validation fail: the history itself is whole.
const (
	ProblemOrphanToolResult    = "orphan_tool_result"
	ProblemUnansweredToolCall  = "unanswered_tool_call"
	ProblemSeqGap              = "seq_gap"
	ProblemCounterMismatch     = "counter_mismatch"
	ProblemCheckpointAhead     = "checkpoint_ahead"
	ProblemCheckpointCorrupted = "checkpoint_corrupted"
	ProblemSchemaVersionNewer  = "schema_version_newer"
	ProblemTurnCountMismatch   = "turn_count_mismatch"
)

// What a repair suggestion asks for. Automatic ones are what POST
// /v1/sessions/{id}/repair applies; the others change or drop history, which
// only the runtime may decide.
const (
	RepairInterruptedResult = "append_interrupted_result"
	RepairRecountTurns      = "recount_turns"
	RepairRewind            = "rewind"
	RepairFork              = "fork"
	RepairCounters          = "repair_counters"
	RepairWriteCheckpoint   = "write_checkpoint"
	RepairUpgradeServer     = "upgrade_server"
)

// Repair is a resume problem's suggested remedy, as a request a program can
// send: Method and Path (nil when the remedy is not a request), and Body.
type Repair struct {
	Action    string         `json:"action"`
	Automatic bool           `json:"automatic"`
	Method    *string        `json:"method"`
	Path      *string        `json:"path"`
	Body      map[string]any `json:"body"`
}

// InterruptedResult is the content of the tool result a repair appends for a
// call that never got one.
const InterruptedResult = "The tool call was interrupted before it returned a result (appended by Logbook's repair)."

// SuggestRepair is the remedy for a problem of session ses, whose latest
// checkpoint's iteration is iteration (0 for none).
func SuggestRepair(code string, seq *int64, ses Session, iteration int64) Repair {
	base := "/v1/sessions/" + ses.ID
	req := func(action string, automatic bool, method, path string, body map[string]any) Repair {
		return Repair{Action: action, Automatic: automatic, Method: &method, Path: &path, Body: body}
	}
	fence := map[string]any{"expected_last_seq": ses.LastSeq}
	before := int64(0)
	if seq != nil && *seq > 0 {
		before = *seq - 1
	}
	switch code {
	case ProblemUnansweredToolCall:
		return req(RepairInterruptedResult, true, "POST", base+"/repair", fence)
	case ProblemTurnCountMismatch:
		return req(RepairRecountTurns, true, "POST", base+"/repair", fence)
	case ProblemOrphanToolResult:
		// Rewinding drops the result and what followed it; forking at the same
		// seq keeps this session as it is (the detail says so).
		return req(RepairRewind, false, "POST", base+"/rewind", map[string]any{"to_seq": before, "expected_last_seq": ses.LastSeq})
	case ProblemSeqGap:
		return req(RepairFork, false, "POST", base+"/fork", map[string]any{"at_seq": before})
	case ProblemCounterMismatch:
		return req(RepairCounters, false, "GET", "/v1/admin/integrity?repair=counters", nil)
	case ProblemCheckpointAhead, ProblemCheckpointCorrupted:
		return req(RepairWriteCheckpoint, false, "PUT", base+"/checkpoint", map[string]any{"iteration": iteration + 1})
	}
	return Repair{Action: RepairUpgradeServer}
}

// RepairSession is the input of POST /v1/sessions/{id}/repair.
type RepairSession struct {
	ExpectedLastSeq *int64 `json:"expected_last_seq,omitempty" validate:"omitempty,gte=0"`
}

// RepairResult says what a repair did, and what it left for the runtime.
type RepairResult struct {
	Session Session `json:"session"`
	// Repaired are the problems it set right.
	Repaired []ResumeProblem `json:"repaired"`
	// Messages are the tool results it appended, in seq order.
	Messages []Message `json:"messages"`
	// Unrepaired are the problems only the runtime can decide on, each with
	// its suggestion.
	Unrepaired []ResumeProblem `json:"unrepaired"`
}

// InterruptedDetail is the detail of a repaired unanswered call.
func InterruptedDetail(callID string, callSeq, resultSeq int64) string {
	return "tool call " + strconv.Quote(callID) + " (seq " + strconv.FormatInt(callSeq, 10) +
		") was answered as interrupted at seq " + strconv.FormatInt(resultSeq, 10)
}
