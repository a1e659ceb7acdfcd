package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// agent runs one session's loop. Logbook holds everything it knows: a new
// process rebuilds the agent from the session's history and its latest
// checkpoint.
type agent struct {
	lb              *client.Client
	sessionID       string
	model           chatModel
	tools           map[string]func(args string) (string, error)
	script          []string // the user's turns
	out             io.Writer
	crashAtToolCall bool

	history   []api.Message // the whole session, in seq order
	iteration int64         // the latest checkpoint's iteration (0: none yet)
}

func (a *agent) run(ctx context.Context) error {
	if err := a.start(ctx); err != nil {
		return err
	}
	for {
		done, err := a.iterate(ctx)
		if err != nil || done {
			return err
		}
	}
}

// start creates the session, or takes it over from a worker that died.
func (a *agent) start(ctx context.Context) error {
	_, err := a.lb.GetSession(ctx, a.sessionID)
	switch client.Code(err) {
	case api.ErrorCodeNotFound:
		if _, err := a.lb.CreateSession(ctx, api.SessionCreate{ID: &a.sessionID, AgentID: client.Ptr("agentloop")}); err != nil {
			return err
		}
		a.say("session %s: new", a.sessionID)
	case "":
		if err != nil {
			return err
		}
		if err := a.resume(ctx); err != nil {
			return err
		}
	default:
		return err
	}
	a.history = a.history[:0]
	for m, err := range a.lb.ListMessages(ctx, a.sessionID, &api.ListMessagesParams{Limit: client.Ptr(200)}) {
		if err != nil {
			return err
		}
		a.history = append(a.history, m)
	}
	return nil
}

// resume reads the hand-over and applies the repairs it suggests that are
// safe to apply by themselves: a crash between a tool call and its result
// leaves the call unanswered, and repair answers it with an error result
// ("the call was interrupted"), which the model reads and acts on.
func (a *agent) resume(ctx context.Context) error {
	r, err := a.lb.Resume(ctx, a.sessionID)
	if err != nil {
		return err
	}
	if r.Checkpoint != nil {
		a.iteration = r.Checkpoint.Iteration
		a.say("session %s: resuming from checkpoint %d (last_seq %d), %d messages after it",
			a.sessionID, r.Checkpoint.Iteration, r.Checkpoint.LastSeq, len(r.MessagesSinceCheckpoint))
	} else {
		a.say("session %s: resuming without a checkpoint, %d messages", a.sessionID, len(r.MessagesSinceCheckpoint))
	}
	for _, p := range r.Validation.Problems {
		a.say("resume found %s at seq %d (automatic repair: %v): %s", p.Code, deref(p.Seq), p.Repair.Automatic, p.Detail)
	}
	if r.Validation.Ok {
		return nil
	}
	rep, err := a.lb.Repair(ctx, a.sessionID, api.RepairRequest{ExpectedLastSeq: &r.Session.LastSeq})
	if err != nil {
		return err
	}
	for _, m := range rep.Messages {
		a.say("repaired: seq %d answers %s (is_error %v): %s", m.Seq, deref(m.ToolCallID), m.IsError, client.TextOf(m.Content))
	}
	if len(rep.Unrepaired) > 0 {
		var codes []string
		for _, p := range rep.Unrepaired {
			codes = append(codes, string(p.Code)+" ("+string(p.Repair.Action)+")")
		}
		return fmt.Errorf("session %s needs a decision repair cannot make: %s", a.sessionID, strings.Join(codes, ", "))
	}
	return nil
}

// iterate is one loop iteration: the user's next turn when the last one is
// over, one model call, its tool calls run and their results stored, and a
// checkpoint. done once the script has no turn left.
func (a *agent) iterate(ctx context.Context) (done bool, err error) {
	if a.turnOver() {
		turn := 0
		for _, m := range a.history {
			if m.Role == api.MessageRoleUser {
				turn++
			}
		}
		if turn == len(a.script) {
			a.say("done: %d messages, checkpoint %d", len(a.history), a.iteration)
			return true, nil
		}
		m, err := a.lb.AppendMessage(ctx, a.sessionID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text(a.script[turn])})
		if err != nil {
			return false, err
		}
		a.stored(m)
	}

	m, err := a.lb.AppendMessage(ctx, a.sessionID, a.model.Next(a.history))
	if err != nil {
		return false, err
	}
	a.stored(m)
	if len(m.ToolCalls) > 0 && a.crashAtToolCall {
		a.say("crash: SIGKILL after storing tool call %s, before its result", m.ToolCalls[0].ID)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}

	state := api.CheckpointState{StopReason: client.Ptr("end_turn"), AdditionalProperties: map[string]any{"model": "scripted-1"}}
	if len(m.ToolCalls) > 0 {
		results := make([]api.MessageInput, len(m.ToolCalls))
		for i, call := range m.ToolCalls {
			results[i] = a.runTool(call)
		}
		stored, err := a.lb.AppendMessages(ctx, a.sessionID, api.MessageBatch{Messages: results})
		if err != nil {
			return false, err
		}
		for i := range stored {
			a.stored(&stored[i])
		}
		state.StopReason = client.Ptr("tool_use")
		state.LastToolResult = client.TextOf(stored[len(stored)-1].Content)
	}

	ck, err := a.lb.PutCheckpoint(ctx, a.sessionID, api.CheckpointPut{Iteration: a.iteration + 1,
		ExpectedIteration: client.Ptr(a.iteration), State: state})
	if err != nil {
		return false, err // stale_iteration: another worker has taken the session over
	}
	a.iteration = ck.Iteration
	a.say("checkpoint %d (last_seq %d)", ck.Iteration, ck.LastSeq)
	return false, nil
}

// turnOver: nothing yet, or the assistant's last word was text, not a call.
func (a *agent) turnOver() bool {
	if len(a.history) == 0 {
		return true
	}
	last := a.history[len(a.history)-1]
	return last.Role == api.MessageRoleAssistant && len(last.ToolCalls) == 0
}

func (a *agent) runTool(call api.ToolCall) api.MessageInput {
	in := api.MessageInput{Role: api.MessageRoleTool, ToolCallID: client.Ptr(call.ID), Name: client.Ptr(call.Name)}
	tool, ok := a.tools[call.Name]
	if !ok {
		in.Content, in.IsError = client.Text("no tool named "+call.Name), client.Ptr(true)
		return in
	}
	out, err := tool(call.Arguments)
	if err != nil {
		out, in.IsError = err.Error(), client.Ptr(true)
	}
	in.Content = client.Text(out)
	return in
}

func (a *agent) stored(m *api.Message) {
	a.history = append(a.history, *m)
	what := client.TextOf(m.Content)
	for _, c := range m.ToolCalls {
		what += fmt.Sprintf("[call %s %s(%s)]", c.ID, c.Name, c.Arguments)
	}
	a.say("seq %d %s: %s", m.Seq, m.Role, what)
}

func (a *agent) say(format string, args ...any) { fmt.Fprintf(a.out, format+"\n", args...) }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
