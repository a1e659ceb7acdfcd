package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/rs/zerolog"
)

// node is a server over one database file that a test can "crash" and start
// again, with or without faults, as a supervisor restarts a dead process.
type node struct {
	t     *testing.T
	path  string
	store *sqlite.Store
	srv   *httptest.Server
	c     *client
}

func startNode(t *testing.T, path string, rules ...repo.FaultRule) *node {
	t.Helper()
	loadSpec(t)
	n := &node{t: t, path: path}
	var faults *repo.Faults
	if len(rules) > 0 {
		var err error
		if faults, err = repo.NewFaults(1, rules...); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Migrate: true, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	n.store = st
	n.srv = httptest.NewServer(api.New(api.Config{Store: st, Log: zerolog.Nop(), Spec: logbook.OpenAPI, AllowOpen: true}))
	n.c = &client{t: t, base: n.srv.URL, http: n.srv.Client(), store: st}
	t.Cleanup(n.stop)
	return n
}

func (n *node) stop() {
	if n.srv == nil {
		return
	}
	n.srv.Close()
	if err := n.store.Close(); err != nil {
		n.t.Errorf("close: %v", err)
	}
	n.srv = nil
}

// restart stops the node and starts a new one on the same file.
func (n *node) restart(rules ...repo.FaultRule) *node {
	n.stop()
	return startNode(n.t, n.path, rules...)
}

// toolStep is one loop iteration of an agent runtime: the model calls a tool, the
// runtime checkpoints with the call pending, runs it, appends the result.
func toolStep(t *testing.T, c *client, session string, it int64) (callID string) {
	t.Helper()
	callID = fmt.Sprintf("call_%d", it)
	mustAppend(t, c, session, map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{
		{"id": callID, "name": "search", "arguments": `{"q":"x"}`}}}, "Idempotency-Key", callID+"-a")
	return callID
}

func pending(callID string) map[string]any {
	return map[string]any{"pending_tool_calls": []map[string]any{{"id": callID, "tool_name": "search", "tool_input": map[string]any{"q": "x"}}}}
}

func mustResume(t *testing.T, c *client, session string) model.Resume {
	t.Helper()
	var r model.Resume
	c.do("GET", "/v1/sessions/"+session+"/resume", nil).want(t, http.StatusOK, &r)
	return r
}

var (
	crashAfter  = repo.FaultRule{Point: repo.PointCheckpointWrite, Kind: repo.FaultCrashAfterCommit, Rate: 1}
	crashBefore = repo.FaultRule{Point: repo.PointCheckpointWrite, Kind: repo.FaultCrashBeforeCommit, Rate: 1}
)

func TestCrashRecovery(t *testing.T) {
	t.Run("checkpoint_survives_a_crash_after_its_write", func(t *testing.T) {
		n := startNode(t, filepath.Join(t.TempDir(), "l.db"))
		s := mustCreateSession(t, n.c, map[string]any{"id": "s"})
		putCheckpoint(n.c, "s", 1, nil, map[string]any{}).want(t, http.StatusCreated, nil)
		call := toolStep(t, n.c, s.ID, 2)

		n = n.restart(crashAfter)
		putCheckpoint(n.c, "s", 2, nil, pending(call)).wantProblem(t, http.StatusServiceUnavailable, "storage_unavailable")

		n = n.restart() // the supervisor brings a new worker up
		r := mustResume(t, n.c, "s")
		if r.Checkpoint == nil || r.Checkpoint.Iteration != 2 || len(r.PendingToolCalls) != 1 || r.PendingToolCalls[0].ID != call || !r.Validation.OK {
			t.Fatalf("resume after a crash after the write: %s", mustJSON(t, r))
		}
	})
	t.Run("crash_before_the_write_restarts_at_the_previous_checkpoint", func(t *testing.T) {
		n := startNode(t, filepath.Join(t.TempDir(), "l.db"))
		mustCreateSession(t, n.c, map[string]any{"id": "s"})
		putCheckpoint(n.c, "s", 1, nil, map[string]any{}).want(t, http.StatusCreated, nil)
		call := toolStep(t, n.c, "s", 2)

		n = n.restart(crashBefore)
		putCheckpoint(n.c, "s", 2, nil, pending(call)).wantProblem(t, http.StatusServiceUnavailable, "storage_unavailable")

		n = n.restart()
		r := mustResume(t, n.c, "s")
		if r.Checkpoint.Iteration != 1 || len(r.MessagesSinceCheckpoint) != 1 || r.MessagesSinceCheckpoint[0].ToolCalls[0].ID != call {
			t.Fatalf("resume: %s", mustJSON(t, r))
		}
		// The call is in the history but no checkpoint lists it: the new worker is
		// told, and runs it again.
		if len(r.Validation.Problems) != 1 || r.Validation.Problems[0].Code != "unanswered_tool_call" {
			t.Fatalf("problems %+v", r.Validation.Problems)
		}
		one := int64(1)
		putCheckpoint(n.c, "s", 2, &one, pending(call)).want(t, http.StatusCreated, nil)
	})
	t.Run("a_new_worker_takes_over_exactly", func(t *testing.T) {
		n := startNode(t, filepath.Join(t.TempDir(), "l.db"))
		mustCreateSession(t, n.c, map[string]any{"id": "s"})
		putCheckpoint(n.c, "s", 1, nil, map[string]any{}).want(t, http.StatusCreated, nil)
		call := toolStep(t, n.c, "s", 2)
		putCheckpoint(n.c, "s", 2, nil, pending(call)).want(t, http.StatusCreated, nil)

		// Worker A stalls; worker B resumes from iteration 2 and finishes the call.
		r := mustResume(t, n.c, "s")
		if r.Checkpoint.Iteration != 2 || r.PendingToolCalls[0].ID != call {
			t.Fatalf("B resumes %s", mustJSON(t, r))
		}
		mustAppend(t, n.c, "s", map[string]any{"role": "tool", "tool_call_id": call, "content": "42"})
		two := int64(2)
		putCheckpoint(n.c, "s", 3, &two, map[string]any{}).want(t, http.StatusCreated, nil)
		// A wakes up and tries to go on from what it last knew: fenced off.
		putCheckpoint(n.c, "s", 3, &two, map[string]any{}).wantProblem(t, http.StatusConflict, "stale_iteration")
		if r := mustResume(t, n.c, "s"); !r.Validation.OK || r.Checkpoint.Iteration != 3 {
			t.Errorf("after the hand-over: %s", mustJSON(t, r))
		}
	})
	t.Run("a_pause_survives_a_crash", func(t *testing.T) {
		n := startNode(t, filepath.Join(t.TempDir(), "l.db"))
		mustCreateSession(t, n.c, map[string]any{"id": "sleeper"})
		until := time.Now().Add(time.Minute).UnixMilli()
		putCheckpoint(n.c, "sleeper", 1, nil, map[string]any{"pause_until_ms": until, "stop_reason": "pause"}).want(t, http.StatusCreated, nil)

		n = n.restart()
		due := listAll[model.Session](t, n.c, "/v1/sessions?due_before="+urlq(time.UnixMilli(until).UTC().Format(time.RFC3339Nano)), 10)
		if len(due) != 1 || due[0].ID != "sleeper" {
			t.Fatalf("due after restart: %+v", due)
		}
		var st model.CheckpointState
		r := mustResume(t, n.c, "sleeper")
		if err := jsonUnmarshal(r.Checkpoint.State, &st); err != nil || st.PauseUntilMs == nil || *st.PauseUntilMs != until {
			t.Errorf("pause after restart: %s", r.Checkpoint.State)
		}
	})
	t.Run("messages_keep_their_order_under_storage_latency", func(t *testing.T) {
		n := startNode(t, filepath.Join(t.TempDir(), "l.db"),
			repo.FaultRule{Point: repo.PointExec, Kind: repo.FaultLatency, Rate: 0.5, Latency: 2 * time.Millisecond},
			repo.FaultRule{Point: repo.PointMessageWrite, Kind: repo.FaultLatency, Rate: 0.5, Latency: time.Millisecond})
		mustCreateSession(t, n.c, map[string]any{"id": "s"})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 15 {
					mustAppend(t, n.c, "s", userMsg(fmt.Sprintf("w%d-%02d", w, i)))
				}
			}()
		}
		wg.Wait()
		last := map[byte]string{}
		for i, m := range listAll[model.Message](t, n.c, "/v1/sessions/s/messages", 200) {
			if m.Seq != int64(i+1) {
				t.Fatalf("seq %d at row %d", m.Seq, i)
			}
			w := m.Content.Text[1]
			if m.Content.Text <= last[w] {
				t.Fatalf("worker %c's %s stored after its %s", w, m.Content, last[w])
			}
			last[w] = m.Content.Text
		}
	})
}

// agentLoop runs iterations of a runtime that retries every 503 with the same
// idempotency key and, after a 503 on a checkpoint, resumes to learn whether the
// write landed. It returns the statuses it saw, in order.
func agentLoop(t *testing.T, c *client, session string, iterations int) []string {
	var trace []string
	retry := func(what string, f func() *response) *response {
		for i := 0; ; i++ {
			res := f()
			trace = append(trace, fmt.Sprintf("%s:%d", what, res.Status))
			if res.Status != http.StatusServiceUnavailable {
				return res
			}
			if i > 200 {
				t.Fatalf("%s still failing", what)
			}
		}
	}
	iteration := int64(0)
	for it := 1; it <= iterations; it++ {
		call := fmt.Sprintf("call_%d", it)
		retry("call", func() *response {
			return c.do("POST", "/v1/sessions/"+session+"/messages", map[string]any{"role": "assistant", "content": "",
				"tool_calls": []map[string]any{{"id": call, "name": "f", "arguments": "{}"}}}, "Idempotency-Key", call+"-a")
		})
		retry("result", func() *response {
			return c.do("POST", "/v1/sessions/"+session+"/messages", map[string]any{"role": "tool", "tool_call_id": call, "content": "ok"},
				"Idempotency-Key", call+"-r")
		})
		next := iteration + 1
		retry("checkpoint", func() *response {
			res := putCheckpoint(c, session, next, &iteration, map[string]any{"step": it})
			if res.Status == http.StatusConflict { // an earlier try landed and its answer was lost
				var r model.Resume
				retry("resume", func() *response { return c.do("GET", "/v1/sessions/"+session+"/resume", nil) }).want(t, http.StatusOK, &r)
				if r.Checkpoint == nil || r.Checkpoint.Iteration != next {
					t.Fatalf("409 but the latest checkpoint is %v", r.Checkpoint)
				}
				return &response{Status: http.StatusCreated}
			}
			return res
		}).want(t, http.StatusCreated, nil)
		iteration = next
	}
	return trace
}

func mixedFaults(rate float64) []repo.FaultRule {
	var rules []repo.FaultRule
	for _, p := range []repo.FaultPoint{repo.PointBegin, repo.PointExec, repo.PointCommit, repo.PointSessionWrite,
		repo.PointMessageWrite, repo.PointMessageRead, repo.PointCheckpointWrite} {
		rules = append(rules, repo.FaultRule{Point: p, Kind: repo.FaultError, Rate: rate / 2})
	}
	return append(rules,
		repo.FaultRule{Point: repo.PointCommit, Kind: repo.FaultCrashAfterCommit, Rate: rate / 2},
		repo.FaultRule{Point: repo.PointCheckpointWrite, Kind: repo.FaultCrashAfterCommit, Rate: rate / 2},
		repo.FaultRule{Point: repo.PointCheckpointWrite, Kind: repo.FaultCrashBeforeCommit, Rate: rate / 2})
}

// At 10% faults everywhere, a runtime that retries loses and duplicates nothing,
// and the same seed gives the same run.
func TestMixedFaultsCorruptNothing(t *testing.T) {
	run := func() []string {
		n := startNode(t, filepath.Join(t.TempDir(), "l.db"), mixedFaults(0.10)...)
		for {
			if res := n.c.do("POST", "/v1/sessions", map[string]any{"id": "s"}); res.Status == http.StatusCreated || res.Status == http.StatusConflict {
				break
			}
		}
		trace := agentLoop(t, n.c, "s", 40)
		n = n.restart()
		r := mustResume(t, n.c, "s")
		if !r.Validation.OK || r.Checkpoint.Iteration != 40 || r.Session.LastSeq != 80 || r.Session.MessageCount != 80 {
			t.Fatalf("after 40 iterations under faults: %s", mustJSON(t, r.Validation))
		}
		if res, err := n.store.IntegrityCheck(context.Background()); err != nil || res != "ok" {
			t.Fatalf("integrity_check: %q %v", res, err)
		}
		return trace
	}
	a, b := run(), run()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the same seed gave different runs:\n%v\n%v", a, b)
	}
	failed := 0
	for _, s := range a {
		if s[len(s)-3:] == "503" {
			failed++
		}
	}
	t.Logf("%d requests, %d answered 503 and were retried", len(a), failed)
}
