package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func userMsg(content string) map[string]any {
	return map[string]any{"role": "user", "content": content, "tokens": 3, "cost": 0.25}
}

func TestAgentTurn(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"agent_id": "agt_1"})

	u := mustAppend(t, c, s.ID, userMsg("What is 6*7?"))
	a := mustAppend(t, c, s.ID, map[string]any{"role": "assistant", "content": "", "model": "gpt-x", "tokens": 20, "cost": 0.5,
		"tool_calls": []map[string]any{{"id": "call_1", "name": "calc", "arguments": `{"expr":"6*7"}`}}})
	tool := mustAppend(t, c, s.ID, map[string]any{"role": "tool", "tool_call_id": "call_1", "name": "calc", "content": "42"})
	if u.Seq != 1 || a.Seq != 2 || tool.Seq != 3 {
		t.Fatalf("seqs %d %d %d, want 1 2 3", u.Seq, a.Seq, tool.Seq)
	}
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].Arguments != `{"expr":"6*7"}` || *tool.ToolCallID != "call_1" {
		t.Errorf("tool call round trip: %+v / %+v", a.ToolCalls, tool.ToolCallID)
	}

	got := mustGetSession(t, c, s.ID)
	if got.Status != model.StatusActive || got.MessageCount != 3 || got.LastSeq != 3 || got.TotalTokens != 23 || got.TotalCost != 0.75 {
		t.Errorf("session counters after a turn: %+v", got)
	}

	var one model.Message
	c.do("GET", "/v1/sessions/"+s.ID+"/messages/"+a.ID, nil).want(t, http.StatusOK, &one)
	if mustJSON(t, one) != mustJSON(t, a) {
		t.Errorf("get by id = %s, want %s", mustJSON(t, one), mustJSON(t, a))
	}
	c.do("GET", "/v1/sessions/other/messages/"+a.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("GET", "/v1/sessions/"+s.ID+"/messages/msg_nope", nil).wantProblem(t, http.StatusNotFound, "not_found")
}

func TestListMessagesFilters(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	roles := []string{"system", "user", "assistant", "user", "assistant", "user", "assistant"}
	for i, r := range roles {
		mustAppend(t, c, s.ID, map[string]any{"role": r, "content": strconv.Itoa(i + 1)})
	}
	seqs := func(ms []model.Message) string {
		out := ""
		for _, m := range ms {
			out += strconv.FormatInt(m.Seq, 10)
		}
		return out
	}
	for _, tc := range []struct{ name, query, want string }{
		{"asc_default", "", "1234567"},
		{"desc", "order=desc", "7654321"},
		{"after_seq", "after_seq=4", "567"},
		{"before_seq", "before_seq=3", "12"},
		{"window_desc", "after_seq=2&before_seq=6&order=desc", "543"},
		{"role", "role=user", "246"},
		{"role_desc_after", "role=assistant&order=desc&after_seq=3", "75"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{1, 2, 200} {
				if got := seqs(listAll[model.Message](t, c, "/v1/sessions/"+s.ID+"/messages?"+tc.query, limit)); got != tc.want {
					t.Errorf("limit %d: got %s, want %s", limit, got, tc.want)
				}
			}
		})
	}
	t.Run("missing_session_is_404", func(t *testing.T) {
		c.do("GET", "/v1/sessions/nope/messages", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})
	t.Run("empty_session_is_empty_page", func(t *testing.T) {
		e := mustCreateSession(t, c, nil)
		var p model.Page[model.Message]
		c.do("GET", "/v1/sessions/"+e.ID+"/messages", nil).want(t, http.StatusOK, &p)
		if len(p.Data) != 0 || p.HasMore || p.NextCursor != nil || p.Data == nil {
			t.Errorf("got %+v", p)
		}
	})
}

// 64 writers on one session: the writer hands out seqs 1..N with no gap or repeat.
func TestConcurrentAppendsGetGapFreeSeqs(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	const writers, each = 64, 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]string{}
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := mustAppend(t, c, s.ID, userMsg(fmt.Sprintf("w%d-%d", w, i)))
				mu.Lock()
				if prev, dup := seen[m.Seq]; dup {
					t.Errorf("seq %d given to %s and %s", m.Seq, prev, m.Content)
				}
				seen[m.Seq] = m.Content.Text
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	msgs := listAll[model.Message](t, c, "/v1/sessions/"+s.ID+"/messages", 200)
	if len(msgs) != writers*each {
		t.Fatalf("stored %d messages, want %d", len(msgs), writers*each)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || seen[m.Seq] != m.Content.Text {
			t.Fatalf("row %d: seq %d content %q, acknowledged %q", i, m.Seq, m.Content, seen[m.Seq])
		}
	}
	got := mustGetSession(t, c, s.ID)
	if got.MessageCount != writers*each || got.LastSeq != writers*each || got.TotalTokens != 3*writers*each {
		t.Errorf("counters: %+v", got)
	}
}

// 20 concurrent retries of one request: one row, and every answer names it.
func TestConcurrentRetriesOfOneKeyStoreOneRow(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	const retries = 20
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		ids     = map[string]int{}
	)
	for range retries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := c.do("POST", "/v1/sessions/"+s.ID+"/messages", userMsg("once"), "Idempotency-Key", "turn-1")
			var m model.Message
			if res.Status != http.StatusCreated && res.Status != http.StatusOK {
				t.Errorf("status %d: %s", res.Status, res.Body)
				return
			}
			res.want(t, res.Status, &m)
			mu.Lock()
			defer mu.Unlock()
			ids[m.ID+"/"+strconv.FormatInt(m.Seq, 10)]++
			if res.Status == http.StatusCreated {
				created++
			} else if res.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay without Idempotent-Replayed header")
			}
		}()
	}
	wg.Wait()
	if created != 1 || len(ids) != 1 {
		t.Errorf("%d answers were 201 and they named %d messages (%v), want 1 and 1", created, len(ids), ids)
	}
	if n := len(listAll[model.Message](t, c, "/v1/sessions/"+s.ID+"/messages", 50)); n != 1 {
		t.Errorf("stored %d rows, want 1", n)
	}
	if got := mustGetSession(t, c, s.ID); got.MessageCount != 1 || got.TotalTokens != 3 {
		t.Errorf("counters counted a retry: %+v", got)
	}
}

func TestIdempotency(t *testing.T) {
	c := newClient(t)
	path := func(s model.Session) string { return "/v1/sessions/" + s.ID + "/messages" }

	t.Run("retry_after_close_returns_stored", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		first := mustAppend(t, c, s.ID, userMsg("a"), "Idempotency-Key", "k")
		c.do("DELETE", "/v1/sessions/"+s.ID, nil).want(t, http.StatusOK, nil)
		var again model.Message
		c.do("POST", path(s), userMsg("a"), "Idempotency-Key", "k").want(t, http.StatusOK, &again)
		if mustJSON(t, again) != mustJSON(t, first) {
			t.Errorf("replay %s, want %s", mustJSON(t, again), mustJSON(t, first))
		}
	})
	t.Run("same_key_other_body_is_409", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		mustAppend(t, c, s.ID, userMsg("a"), "Idempotency-Key", "k")
		c.do("POST", path(s), userMsg("b"), "Idempotency-Key", "k").wantProblem(t, http.StatusConflict, "idempotency_conflict")
		c.do("POST", path(s), map[string]any{"messages": []any{userMsg("a")}}, "Idempotency-Key", "k").
			wantProblem(t, http.StatusConflict, "idempotency_conflict")
	})
	t.Run("keys_are_scoped_to_the_session", func(t *testing.T) {
		a, b := mustCreateSession(t, c, nil), mustCreateSession(t, c, nil)
		mustAppend(t, c, a.ID, userMsg("x"), "Idempotency-Key", "shared")
		if m := mustAppend(t, c, b.ID, userMsg("x"), "Idempotency-Key", "shared"); m.SessionID != b.ID || m.Seq != 1 {
			t.Errorf("got %+v", m)
		}
	})
	t.Run("batch_header_key_replays_the_batch", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		batch := map[string]any{"messages": []any{userMsg("1"), userMsg("2"), userMsg("3")}}
		var first, again struct{ Data []model.Message }
		c.do("POST", path(s), batch, "Idempotency-Key", "b1").want(t, http.StatusCreated, &first)
		c.do("POST", path(s), batch, "Idempotency-Key", "b1").want(t, http.StatusOK, &again)
		if mustJSON(t, first) != mustJSON(t, again) || len(again.Data) != 3 {
			t.Errorf("replay %s, want %s", mustJSON(t, again), mustJSON(t, first))
		}
		if got := mustGetSession(t, c, s.ID); got.MessageCount != 3 {
			t.Errorf("message_count %d, want 3", got.MessageCount)
		}
	})
	t.Run("per_message_keys_dedupe_inside_batches", func(t *testing.T) {
		s := mustCreateSession(t, c, nil)
		m1 := map[string]any{"role": "user", "content": "1", "idempotency_key": "m1"}
		m2 := map[string]any{"role": "user", "content": "2", "idempotency_key": "m2"}
		m3 := map[string]any{"role": "user", "content": "3", "idempotency_key": "m3"}
		var first, second struct{ Data []model.Message }
		c.do("POST", path(s), map[string]any{"messages": []any{m1, m2}}).want(t, http.StatusCreated, &first)
		c.do("POST", path(s), map[string]any{"messages": []any{m1, m2, m3}}).want(t, http.StatusCreated, &second)
		if len(second.Data) != 3 || second.Data[0].ID != first.Data[0].ID || second.Data[1].Seq != 2 || second.Data[2].Seq != 3 {
			t.Errorf("second batch answered %s", mustJSON(t, second))
		}
		c.do("POST", path(s), map[string]any{"messages": []any{m1, m2, m3}}).want(t, http.StatusOK, nil)
		changed := map[string]any{"role": "user", "content": "changed", "idempotency_key": "m2"}
		p := c.do("POST", path(s), map[string]any{"messages": []any{userMsg("new"), changed}}).
			wantProblem(t, http.StatusConflict, "idempotency_conflict")
		if len(p.Errors) != 1 || p.Errors[0].Field != "messages[1].idempotency_key" {
			t.Errorf("conflict names %+v", p.Errors)
		}
		if got := mustGetSession(t, c, s.ID); got.MessageCount != 3 {
			t.Errorf("message_count %d, want 3: a refused batch wrote something", got.MessageCount)
		}
	})
}

func TestBatchIsAllOrNothing(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	path := "/v1/sessions/" + s.ID + "/messages"
	mustAppend(t, c, s.ID, userMsg("first"))

	bad := map[string]any{"messages": []any{userMsg("ok"), map[string]any{"role": "tool", "content": "no call id"}}}
	p := c.do("POST", path, bad).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "messages[1].tool_call_id" {
		t.Errorf("errors = %+v, want messages[1].tool_call_id", p.Errors)
	}

	msgs := make([]any, model.MaxBatch)
	for i := range msgs {
		msgs[i] = userMsg(strconv.Itoa(i))
	}
	var out struct{ Data []model.Message }
	c.do("POST", path, map[string]any{"messages": msgs}).want(t, http.StatusCreated, &out)
	if len(out.Data) != model.MaxBatch || out.Data[0].Seq != 2 || out.Data[model.MaxBatch-1].Seq != model.MaxBatch+1 {
		t.Fatalf("batch of %d got seqs %d..%d", len(out.Data), out.Data[0].Seq, out.Data[len(out.Data)-1].Seq)
	}
	c.do("POST", path, map[string]any{"messages": append(msgs, userMsg("one too many"))}).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")

	c.do("DELETE", "/v1/sessions/"+s.ID, nil).want(t, http.StatusOK, nil)
	c.do("POST", path, map[string]any{"messages": []any{userMsg("late")}}).wantProblem(t, http.StatusConflict, "session_closed")
	if got := mustGetSession(t, c, s.ID); got.MessageCount != model.MaxBatch+1 || got.LastSeq != model.MaxBatch+1 {
		t.Errorf("counters %+v", got)
	}
}

// A reader walking pages of 7 while a writer appends sees every message once, in
// order: keyset pages do not shift when rows are added.
func TestPagingWalkWhileAppending(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	const total = 300
	for i := range 20 {
		mustAppend(t, c, s.ID, userMsg(strconv.Itoa(i)))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 20; i < total; i++ {
			mustAppend(t, c, s.ID, userMsg(strconv.Itoa(i)))
		}
	}()

	var seen []model.Message
	base := "/v1/sessions/" + s.ID + "/messages?limit=7"
	next := base
	for pages := 0; ; pages++ {
		if pages > 10*total {
			t.Fatalf("walk did not end: %d of %d messages seen", len(seen), total)
		}
		var p model.Page[model.Message]
		c.do("GET", next, nil).want(t, http.StatusOK, &p)
		seen = append(seen, p.Data...)
		if p.HasMore {
			next = base + "&cursor=" + *p.NextCursor
			continue
		}
		// The end for now: tail from the last seq seen until the writer is done.
		select {
		case <-done:
			if len(seen) == total {
				goto check
			}
		default:
		}
		last := int64(0)
		if len(seen) > 0 {
			last = seen[len(seen)-1].Seq
		}
		base = "/v1/sessions/" + s.ID + "/messages?limit=7&after_seq=" + strconv.FormatInt(last, 10)
		next = base
	}
check:
	for i, m := range seen {
		if m.Seq != int64(i+1) || m.Content.Text != strconv.Itoa(i) {
			t.Fatalf("page walk row %d: seq %d content %q", i, m.Seq, m.Content)
		}
	}
}
