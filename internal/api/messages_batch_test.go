package api_test

import (
	"net/http"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// TestAppendMessageBatch covers POST /v1/sessions/{id}/messages/batch: one body
// shape and one answer shape, and the idempotency of the route it shares its
// code with.
func TestAppendMessageBatch(t *testing.T) {
	c := newClient(t)
	batch := func(contents ...string) map[string]any {
		var ms []any
		for _, s := range contents {
			ms = append(ms, userMsg(s))
		}
		return map[string]any{"messages": ms}
	}
	type answer struct {
		Data []model.Message `json:"data"`
	}
	seqs := func(a answer) (out []int64) {
		for _, m := range a.Data {
			out = append(out, m.Seq)
		}
		return out
	}

	t.Run("answers_data_in_input_order", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		mustAppend(t, c, s.ID, userMsg("first"))
		var got answer
		c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", batch("a", "b", "c")).want(t, http.StatusCreated, &got)
		if len(got.Data) != 3 || got.Data[0].Seq != 2 || got.Data[2].Seq != 4 || got.Data[1].Content.Text != "b" {
			t.Fatalf("got seqs %v, want [2 3 4] in input order: %+v", seqs(got), got)
		}
		if ses := mustGetSession(t, c, s.ID); ses.MessageCount != 4 || ses.LastSeq != 4 {
			t.Errorf("session after the batch: count %d, last_seq %d; want 4, 4", ses.MessageCount, ses.LastSeq)
		}
	})

	t.Run("one_message_is_always_a_batch_answer", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		var got answer
		c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", batch("only")).want(t, http.StatusCreated, &got)
		if len(got.Data) != 1 || got.Data[0].Seq != 1 {
			t.Fatalf("got %+v, want data with seq 1", got)
		}
	})

	t.Run("a_single_message_body_is_422", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		p := c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", userMsg("alone")).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "messages" {
			t.Errorf("errors = %+v, want one naming messages", p.Errors)
		}
		c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", map[string]any{}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", map[string]any{"messages": []any{}}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if ses := mustGetSession(t, c, s.ID); ses.MessageCount != 0 {
			t.Errorf("message_count = %d after refused batches, want 0", ses.MessageCount)
		}
	})

	t.Run("all_or_nothing", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		body := map[string]any{"messages": []any{userMsg("ok"), map[string]any{"role": "tool", "content": "no call id"}}}
		p := c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) == 0 || p.Errors[0].Field != "messages[1].tool_call_id" {
			t.Errorf("errors = %+v, want messages[1].tool_call_id", p.Errors)
		}
		if ses := mustGetSession(t, c, s.ID); ses.MessageCount != 0 {
			t.Errorf("message_count = %d, want 0", ses.MessageCount)
		}
	})

	t.Run("replay_on_either_route", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		var first, again, old answer
		c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", batch("x", "y"), "Idempotency-Key", "turn-1").want(t, http.StatusCreated, &first)
		res := c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", batch("x", "y"), "Idempotency-Key", "turn-1").want(t, http.StatusOK, &again)
		if res.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("Idempotent-Replayed = %q, want true", res.Header.Get("Idempotent-Replayed"))
		}
		// a client that sent the batch to the old route before retries on the new one, and back
		c.do("POST", "/v1/sessions/"+s.ID+"/messages", batch("x", "y"), "Idempotency-Key", "turn-1").want(t, http.StatusOK, &old)
		if mustJSON(t, again) != mustJSON(t, first) || mustJSON(t, old) != mustJSON(t, first) {
			t.Errorf("replays differ:\nfirst %s\nagain %s\nold   %s", mustJSON(t, first), mustJSON(t, again), mustJSON(t, old))
		}
		c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", batch("x", "z"), "Idempotency-Key", "turn-1").wantProblem(t, http.StatusConflict, "idempotency_conflict")
		if ses := mustGetSession(t, c, s.ID); ses.MessageCount != 2 {
			t.Errorf("message_count = %d after replays, want 2", ses.MessageCount)
		}
	})

	t.Run("expected_last_seq_fences", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		body := batch("late")
		body["expected_last_seq"] = 5
		c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", body).wantProblem(t, http.StatusConflict, "stale_seq")
	})

	t.Run("missing_session_is_404", func(t *testing.T) {
		c.do("POST", "/v1/sessions/nope/messages/batch", batch("x")).wantProblem(t, http.StatusNotFound, "not_found")
	})

	t.Run("closed_session_is_409", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		c.do("DELETE", "/v1/sessions/"+s.ID, nil).want(t, http.StatusOK, nil)
		c.do("POST", "/v1/sessions/"+s.ID+"/messages/batch", batch("x")).wantProblem(t, http.StatusConflict, "session_closed")
	})
}
