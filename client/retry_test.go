package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

func TestRetriesAreSafe(t *testing.T) {
	ctx := context.Background()
	direct, _ := newClient(t, server.url)
	px := newProxy(t, server.url)
	c, _ := newClient(t, px.URL)

	lastSeq := func(t *testing.T, id string) int64 {
		t.Helper()
		s, err := direct.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.MessageCount != s.LastSeq {
			t.Fatalf("message_count %d, last_seq %d", s.MessageCount, s.LastSeq)
		}
		return s.LastSeq
	}

	t.Run("append_answer_lost_is_stored_once", func(t *testing.T) {
		s := newSession(t, direct)
		px.fail(fault{method: "POST", pathSuffix: "/messages", kind: dropAnswer})
		m, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("only once")})
		if err != nil {
			t.Fatal(err)
		}
		if m.Seq != 1 || client.TextOf(m.Content) != "only once" {
			t.Errorf("answer = seq %d %q, want the message stored at seq 1", m.Seq, client.TextOf(m.Content))
		}
		sent := px.requests("POST", "/"+s.ID+"/messages")
		if len(sent) != 2 || sent[0].idempotencyKey == "" || sent[0].idempotencyKey != sent[1].idempotencyKey {
			t.Errorf("requests = %+v, want two with the same Idempotency-Key", sent)
		}
		if got := lastSeq(t, s.ID); got != 1 {
			t.Errorf("the session holds %d messages, want 1", got)
		}

		// Another logical append gets its own key, so it is stored.
		if _, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("only once")}); err != nil {
			t.Fatal(err)
		}
		sent = px.requests("POST", "/"+s.ID+"/messages")
		if len(sent) != 3 || sent[2].idempotencyKey == sent[0].idempotencyKey {
			t.Errorf("a second append reused the first one's key: %+v", sent)
		}
		if got := lastSeq(t, s.ID); got != 2 {
			t.Errorf("the session holds %d messages, want 2", got)
		}
	})

	t.Run("batch_answer_lost_is_stored_once", func(t *testing.T) {
		s := newSession(t, direct)
		px.fail(fault{method: "POST", pathSuffix: "/messages/batch", kind: dropAnswer})
		ms, err := c.AppendMessages(ctx, s.ID, api.MessageBatch{Messages: []api.MessageInput{
			{Role: api.MessageRoleUser, Content: client.Text("a")},
			{Role: api.MessageRoleAssistant, Content: client.Text("b")}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 2 || ms[0].Seq != 1 || ms[1].Seq != 2 {
			t.Errorf("answer = %+v, want seqs 1 and 2", ms)
		}
		if n := len(px.requests("POST", "/messages/batch")); n != 2 {
			t.Errorf("sent %d times, want 2", n)
		}
		if got := lastSeq(t, s.ID); got != 2 {
			t.Errorf("the session holds %d messages, want 2", got)
		}
	})

	t.Run("checkpoint_answer_lost_is_the_stored_one", func(t *testing.T) {
		s := newSession(t, direct)
		px.fail(fault{method: "PUT", pathSuffix: "/" + s.ID + "/checkpoint", kind: dropAnswer})
		ck, err := c.PutCheckpoint(ctx, s.ID, api.CheckpointPut{Iteration: 1, ExpectedIteration: client.Ptr[int64](0),
			State: api.CheckpointState{StopReason: client.Ptr("tool_use")}})
		if err != nil {
			t.Fatalf("a retried checkpoint write: %v", err)
		}
		if ck.Iteration != 1 || ck.State.StopReason == nil || *ck.State.StopReason != "tool_use" {
			t.Errorf("checkpoint = %+v", ck)
		}
		if n := len(px.requests("PUT", "/"+s.ID+"/checkpoint")); n != 2 {
			t.Errorf("sent %d times, want 2", n)
		}
		// Another worker's iteration 1 (another state) is still a conflict.
		_, err = c.PutCheckpoint(ctx, s.ID, api.CheckpointPut{Iteration: 1, State: api.CheckpointState{StopReason: client.Ptr("other")}})
		if client.Code(err) != api.ErrorCodeStaleIteration {
			t.Errorf("err = %v, want stale_iteration", err)
		}
	})

	t.Run("503_is_retried", func(t *testing.T) {
		s := newSession(t, direct)
		px.fail(fault{method: "POST", pathSuffix: "/" + s.ID + "/messages", kind: "503", retryAfter: "0"})
		px.fail(fault{method: "POST", pathSuffix: "/" + s.ID + "/messages", kind: "503", retryAfter: "0"})
		if _, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("x")}); err != nil {
			t.Fatal(err)
		}
		if n := len(px.requests("POST", "/"+s.ID+"/messages")); n != 3 {
			t.Errorf("sent %d times, want 3", n)
		}
		if got := lastSeq(t, s.ID); got != 1 {
			t.Errorf("the session holds %d messages, want 1", got)
		}
	})

	t.Run("429_waits_retry_after", func(t *testing.T) {
		s := newSession(t, direct)
		slow, _ := newClient(t, px.URL, client.WithRetries(2, time.Millisecond, 2*time.Second))
		px.fail(fault{method: "GET", pathSuffix: "/" + s.ID, kind: "429", retryAfter: "1"})
		start := time.Now()
		if _, err := slow.GetSession(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < time.Second {
			t.Errorf("retried after %v, before Retry-After: 1", waited)
		}
	})

	t.Run("retry_after_past_the_limit_is_returned", func(t *testing.T) {
		s := newSession(t, direct)
		px.fail(fault{method: "GET", pathSuffix: "/" + s.ID, kind: "429", retryAfter: "60"})
		_, err := c.GetSession(ctx, s.ID)
		var p *client.Problem
		if !errors.As(err, &p) || p.Status != http.StatusTooManyRequests || p.Code != api.ErrorCodeRateLimited ||
			p.RetryAfter != time.Minute || p.RequestID != "proxy-fault" {
			t.Fatalf("err = %#v, want 429 rate_limited with RetryAfter 1m", err)
		}
		if n := len(px.requests("GET", "/"+s.ID)); n != 1 {
			t.Errorf("sent %d times, want once", n)
		}
	})

	t.Run("lost_answer_of_a_create_is_replayed", func(t *testing.T) {
		px.fail(fault{method: "POST", pathSuffix: "/v1/sessions", kind: dropAnswer})
		before := len(px.requests("POST", "/v1/sessions"))
		s, err := c.CreateSession(ctx, api.SessionCreate{Title: client.Ptr("once")})
		if err != nil {
			t.Fatalf("a retried create: %v", err)
		}
		sent := px.requests("POST", "/v1/sessions")[before:]
		if len(sent) != 2 || sent[0].idempotencyKey == "" || sent[0].idempotencyKey != sent[1].idempotencyKey {
			t.Errorf("requests = %+v, want two with the same Idempotency-Key the client made", sent)
		}
		if got, err := direct.GetSession(ctx, s.ID); err != nil || got.Title == nil || *got.Title != "once" {
			t.Errorf("the answer names %s: %+v, %v", s.ID, got, err)
		}
	})

	t.Run("lost_answer_of_a_fenced_rewind_is_replayed", func(t *testing.T) {
		s := newSession(t, direct)
		for _, text := range []string{"a", "b"} {
			if _, err := direct.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text(text)}); err != nil {
				t.Fatal(err)
			}
		}
		px.fail(fault{method: "POST", pathSuffix: "/" + s.ID + "/rewind", kind: dropAnswer})
		res, err := c.Rewind(ctx, s.ID, api.Rewind{ToSeq: client.Ptr[int64](1), ExpectedLastSeq: client.Ptr[int64](2),
			Messages: []api.MessageInput{{Role: api.MessageRoleUser, Content: client.Text("c")}, {Role: api.MessageRoleUser, Content: client.Text("d")}}})
		if err != nil {
			t.Fatalf("a retried fenced rewind: %v (its first try's answer must come back, not stale_seq)", err)
		}
		if res.Session.LastSeq != 3 {
			t.Errorf("answer = %+v, want last_seq 3", res.Session)
		}
		if n := len(px.requests("POST", "/"+s.ID+"/rewind")); n != 2 {
			t.Errorf("sent %d times, want 2", n)
		}
		if got := lastSeq(t, s.ID); got != 3 {
			t.Errorf("the session holds %d messages, want 3: the rewind applied once", got)
		}
	})
}
