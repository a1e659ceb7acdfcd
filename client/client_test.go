package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

func newSession(t *testing.T, c *client.Client) *api.Session {
	t.Helper()
	s, err := c.CreateSession(context.Background(), api.SessionCreate{AgentID: client.Ptr("client-test"),
		Metadata: map[string]any{"test": t.Name()}})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	return s
}

// A whole agent turn as a runtime writes it, then read back as a new worker
// would after a crash.
func TestWholeTurnThenResume(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	s := newSession(t, c)
	if s.Status != api.SessionStatusCreated || s.LastSeq != 0 {
		t.Fatalf("new session = %+v, want created with last_seq 0", s)
	}

	user, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser,
		Content: client.Text("Can I get a refund for order 1042?"), Tokens: client.Ptr[int64](12)})
	if err != nil {
		t.Fatal(err)
	}
	call, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleAssistant, Content: client.Text(""),
		Model:     client.Ptr("gpt-4o"),
		ToolCalls: []api.ToolCallInput{{ID: "call_1", Name: "lookup_order", Arguments: `{"order_id": 1042}`}}})
	if err != nil {
		t.Fatal(err)
	}
	ck, err := c.PutCheckpoint(ctx, s.ID, api.CheckpointPut{Iteration: 1, ExpectedIteration: client.Ptr[int64](0),
		State: api.CheckpointState{
			PendingToolCalls:     []api.PendingToolCall{{ID: "call_1", ToolName: "lookup_order", ToolInput: map[string]any{"order_id": 1042}}},
			AdditionalProperties: map[string]any{"plan": []any{"look up", "answer"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	result, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleTool, ToolCallID: client.Ptr("call_1"),
		Name: client.Ptr("lookup_order"), Content: client.Text(`{"status": "delivered", "refundable": true}`)})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.AppendMessages(ctx, s.ID, api.MessageBatch{ExpectedLastSeq: client.Ptr[int64](3), Messages: []api.MessageInput{
		{Role: api.MessageRoleAssistant, Content: client.Text("Yes: order 1042 is refundable."), Tokens: client.Ptr[int64](25)}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range []int64{user.Seq, call.Seq, result.Seq, reply[0].Seq} {
		if got != int64(i+1) {
			t.Errorf("message %d has seq %d, want %d", i, got, i+1)
		}
	}
	if ck.Iteration != 1 || ck.LastSeq != 2 {
		t.Errorf("checkpoint iteration %d last_seq %d, want 1 and 2", ck.Iteration, ck.LastSeq)
	}

	r, err := c.Resume(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Validation.Ok || len(r.Validation.Problems) != 0 {
		t.Errorf("resume validation = %+v, want ok", r.Validation)
	}
	if r.Checkpoint == nil || r.Checkpoint.Iteration != 1 {
		t.Fatalf("resume checkpoint = %+v, want iteration 1", r.Checkpoint)
	}
	if plan := r.Checkpoint.State.AdditionalProperties["plan"]; fmt.Sprint(plan) != "[look up answer]" {
		t.Errorf("the runtime's own state key came back as %v", plan)
	}
	if len(r.PendingToolCalls) != 1 || r.PendingToolCalls[0].ID != "call_1" {
		t.Errorf("pending tool calls = %+v, want call_1", r.PendingToolCalls)
	}
	var seqs []int64
	for _, m := range r.MessagesSinceCheckpoint {
		seqs = append(seqs, m.Seq)
	}
	if fmt.Sprint(seqs) != "[3 4]" {
		t.Errorf("messages since the checkpoint have seqs %v, want [3 4]", seqs)
	}
	if got := client.TextOf(r.MessagesSinceCheckpoint[1].Content); got != "Yes: order 1042 is refundable." {
		t.Errorf("reply text = %q", got)
	}
	if r.Session.LastSeq != 4 || r.Session.TotalTokens != 37 || r.Session.Status != api.SessionStatusActive {
		t.Errorf("session = last_seq %d, tokens %d, status %s; want 4, 37, active", r.Session.LastSeq, r.Session.TotalTokens, r.Session.Status)
	}

	closed, err := c.CloseSession(ctx, s.ID)
	if err != nil || closed.Status != api.SessionStatusCompleted {
		t.Fatalf("close = %v, %v; want completed", closed, err)
	}
	_, err = c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("one more thing")})
	if client.Code(err) != api.ErrorCodeSessionClosed {
		t.Errorf("append to a closed session: %v, want session_closed", err)
	}
}

func TestRewindReplacesTheTail(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	s := newSession(t, c)
	for _, text := range []string{"one", "two", "three"} {
		if _, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text(text)}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := c.Rewind(ctx, s.ID, api.Rewind{ToSeq: client.Ptr[int64](1), ExpectedLastSeq: client.Ptr[int64](3),
		Messages: []api.MessageInput{{Role: api.MessageRoleAssistant, Content: client.Text("two, again")}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.RemovedMessages != 2 || len(r.Messages) != 1 || r.Messages[0].Seq != 2 || r.Session.LastSeq != 2 {
		t.Fatalf("rewind = removed %d, tail %+v, last_seq %d; want 2 removed, seq 2, last_seq 2", r.RemovedMessages, r.Messages, r.Session.LastSeq)
	}
	_, err = c.Rewind(ctx, s.ID, api.Rewind{ToSeq: client.Ptr[int64](0), ExpectedLastSeq: client.Ptr[int64](3)})
	if client.Code(err) != api.ErrorCodeStaleSeq {
		t.Errorf("a stale rewind: %v, want stale_seq", err)
	}
}

func TestProblems(t *testing.T) {
	ctx := context.Background()
	c, chk := newClient(t, server.url)
	s := newSession(t, c)

	t.Run("unknown_session_is_not_found", func(t *testing.T) {
		_, err := c.GetSession(ctx, "no-such-session")
		var p *client.Problem
		if !errors.As(err, &p) {
			t.Fatalf("err = %v (%T), want a *Problem", err, err)
		}
		if p.Status != http.StatusNotFound || p.Code != api.ErrorCodeNotFound || p.Title != "Not Found" || p.Detail == "" || p.RequestID == "" {
			t.Errorf("problem = %+v, want 404 not_found with title, detail and request id", p)
		}
	})

	t.Run("invalid_field_is_named", func(t *testing.T) {
		_, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleTool, Content: client.Text("a result for no call")})
		var p *client.Problem
		if !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity || p.Code != api.ErrorCodeValidationFailed {
			t.Fatalf("err = %v, want 422 validation_failed", err)
		}
		if msg, ok := p.Field("tool_call_id"); !ok || msg == "" {
			t.Errorf("errors = %+v, want one naming tool_call_id", p.Errors)
		}
		_, err = c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: "robot"})
		if !errors.As(err, &p) {
			t.Fatalf("err = %v, want a problem", err)
		}
		if _, ok := p.Field("role"); !ok || p.Code != api.ErrorCodeValidationFailed {
			t.Errorf("problem = %v %+v, want validation_failed naming role", p, p.Errors)
		}
	})

	t.Run("other_4xx_are_not_retried", func(t *testing.T) {
		before := chk.requests.Load()
		_, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleTool, Content: client.Text("x")})
		if client.Code(err) != api.ErrorCodeValidationFailed {
			t.Fatalf("err = %v", err)
		}
		if n := chk.requests.Load() - before; n != 1 {
			t.Errorf("a 422 was sent %d times, want once", n)
		}
	})

	t.Run("stale_iteration_says_the_latest", func(t *testing.T) {
		if _, err := c.PutCheckpoint(ctx, s.ID, api.CheckpointPut{Iteration: 3, State: api.CheckpointState{}}); err != nil {
			t.Fatal(err)
		}
		_, err := c.PutCheckpoint(ctx, s.ID, api.CheckpointPut{Iteration: 4, ExpectedIteration: client.Ptr[int64](2),
			State: api.CheckpointState{}})
		var p *client.Problem
		if !errors.As(err, &p) || p.Code != api.ErrorCodeStaleIteration || p.LatestIteration == nil || *p.LatestIteration != 3 {
			t.Fatalf("err = %v, want stale_iteration with latest_iteration 3", err)
		}
	})

	t.Run("generated_layer_with_check", func(t *testing.T) {
		r, err := c.API.GetAgentWithResponse(ctx, "no-such-agent")
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Check(r.HTTPResponse, r.Body); client.Code(err) != api.ErrorCodeNotFound {
			t.Errorf("Check = %v, want not_found", err)
		}
		if r.ApplicationProblemJSON404 == nil || r.ApplicationProblemJSON404.Code != api.ErrorCodeNotFound {
			t.Errorf("generated 404 = %+v", r.ApplicationProblemJSON404)
		}
	})
}

func TestPagination(t *testing.T) {
	ctx := context.Background()
	c, chk := newClient(t, server.url)
	s := newSession(t, c)

	batch := api.MessageBatch{}
	for i := range 25 {
		batch.Messages = append(batch.Messages, api.MessageInput{Role: api.MessageRoleUser, Content: client.Text(fmt.Sprint("m", i+1))})
	}
	if _, err := c.AppendMessages(ctx, s.ID, batch); err != nil {
		t.Fatal(err)
	}

	t.Run("messages_across_pages", func(t *testing.T) {
		before := chk.requests.Load()
		var seqs []int64
		for m, err := range c.ListMessages(ctx, s.ID, &api.ListMessagesParams{Limit: client.Ptr(7)}) {
			if err != nil {
				t.Fatal(err)
			}
			if client.TextOf(m.Content) != fmt.Sprint("m", m.Seq) {
				t.Errorf("seq %d has text %q", m.Seq, client.TextOf(m.Content))
			}
			seqs = append(seqs, m.Seq)
		}
		if len(seqs) != 25 || seqs[0] != 1 || seqs[24] != 25 {
			t.Fatalf("walked seqs %v, want 1..25", seqs)
		}
		if n := chk.requests.Load() - before; n != 4 {
			t.Errorf("walking 25 messages 7 a page took %d requests, want 4", n)
		}
	})

	t.Run("newest_first_and_early_break", func(t *testing.T) {
		before := chk.requests.Load()
		var seqs []int64
		for m, err := range c.ListMessages(ctx, s.ID, &api.ListMessagesParams{Limit: client.Ptr(2), Order: client.Ptr(api.ListMessagesOrderDesc)}) {
			if err != nil {
				t.Fatal(err)
			}
			if seqs = append(seqs, m.Seq); len(seqs) == 3 {
				break
			}
		}
		if fmt.Sprint(seqs) != "[25 24 23]" {
			t.Errorf("seqs = %v, want [25 24 23]", seqs)
		}
		if n := chk.requests.Load() - before; n != 2 {
			t.Errorf("3 messages 2 a page took %d requests, want 2", n)
		}
	})

	t.Run("checkpoints", func(t *testing.T) {
		for i := int64(1); i <= 5; i++ {
			if _, err := c.PutCheckpoint(ctx, s.ID, api.CheckpointPut{Iteration: i, State: api.CheckpointState{}}); err != nil {
				t.Fatal(err)
			}
		}
		var its []int64
		for ck, err := range c.ListCheckpoints(ctx, s.ID, &api.ListCheckpointsParams{Limit: client.Ptr(2)}) {
			if err != nil {
				t.Fatal(err)
			}
			its = append(its, ck.Iteration)
		}
		if fmt.Sprint(its) != "[5 4 3 2 1]" {
			t.Errorf("iterations = %v, want [5 4 3 2 1]", its)
		}
	})

	t.Run("sessions_filtered", func(t *testing.T) {
		var want []string
		for range 5 {
			s, err := c.CreateSession(ctx, api.SessionCreate{Metadata: map[string]any{"suite": "pages-" + s.ID}})
			if err != nil {
				t.Fatal(err)
			}
			want = append([]string{s.ID}, want...) // newest first
		}
		var got []string
		for s, err := range c.ListSessions(ctx, &api.ListSessionsParams{Limit: client.Ptr(2), Metadata: map[string]string{"suite": "pages-" + s.ID}}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, s.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("sessions = %v, want %v", got, want)
		}
	})

	t.Run("error_is_yielded_once", func(t *testing.T) {
		n := 0
		for _, err := range c.ListMessages(ctx, "no-such-session", nil) {
			n++
			if client.Code(err) != api.ErrorCodeNotFound {
				t.Errorf("err = %v, want not_found", err)
			}
		}
		if n != 1 {
			t.Errorf("yielded %d times, want once", n)
		}
	})
}
