package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// The context section end to end, briefly, against a server built from
// ../server: a 300-message session compacted through 270, every read checked
// and timed, one short concurrent round of each, and the report.
func TestContextSection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server; skipped with -short")
	}
	opts := options{contextMessages: 300, contextReps: 10, contextClients: 2, contextRounds: 1,
		duration: 200 * time.Millisecond}
	e := &env{opts: opts, serverBin: buildServer(t), self: testSelf(t), tmp: t.TempDir(), client: newClient()}
	defer e.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var rep report
	var out bytes.Buffer
	if err := contextSection(ctx, e, &rep, &out); err != nil {
		t.Fatal(err)
	}
	rep.summary(&out)
	t.Log(out.String())

	c := rep.Context
	if c == nil {
		t.Fatal("no context report")
	}
	if c.Messages != 300 || c.ThroughSeq != 270 || c.Reps != 10 || c.Clients != 2 || c.TargetMs != targetContextMs {
		t.Errorf("report says %d messages through %d, %d reps, %d clients, target %v; want 300, 270, 10, 2, %v",
			c.Messages, c.ThroughSeq, c.Reps, c.Clients, c.TargetMs, targetContextMs)
	}
	want := map[string]int{"ctx-4k": -1, "ctx-all": 30, "ctx-4k+b": -1, "page-50": contextPageSize} // -1: what fits
	if len(c.Reads) != len(want) {
		t.Fatalf("%d reads, want %d", len(c.Reads), len(want))
	}
	pass := true
	for _, rd := range c.Reads {
		n, ok := want[rd.Name]
		if !ok {
			t.Errorf("unexpected read %q", rd.Name)
		}
		// A budgeted read holds the system prompt and what fits of the 30 after the compaction.
		if n >= 0 && rd.Messages != n || n < 0 && (rd.Messages < 2 || rd.Messages > 31) {
			t.Errorf("%s answered %d messages, want %d (-1: 2 to 31)", rd.Name, rd.Messages, n)
		}
		if rd.Bytes <= 0 || !(0 < rd.P50Ms && rd.P50Ms <= rd.P99Ms) {
			t.Errorf("%s: %d bytes, p50 %v, p99 %v ms; want bytes and 0 < p50 <= p99", rd.Name, rd.Bytes, rd.P50Ms, rd.P99Ms)
		}
		if (rd.Pass != nil) != (rd.Name != "page-50") || rd.Goal != (rd.Pass != nil) {
			t.Errorf("%s: held to the goal %v, verdict %v; only the page goes without", rd.Name, rd.Goal, rd.Pass)
		}
		if rd.Pass != nil {
			if *rd.Pass != (rd.P50Ms <= targetContextMs) {
				t.Errorf("%s: verdict %v for p50 %v ms", rd.Name, *rd.Pass, rd.P50Ms)
			}
			pass = pass && *rd.Pass
		}
		if len(rd.Rounds) != 1 || rd.Rounds[0].Requests == 0 || rd.Rounds[0].Errors != 0 || rd.PerSecond != rd.Rounds[0].PerSecond {
			t.Errorf("%s: rounds %+v, median %v reads/s; want one round of reads without errors", rd.Name, rd.Rounds, rd.PerSecond)
		}
		if rd.CPU != rd.Rounds[0].ServerCPU {
			t.Errorf("%s: median CPU %v, want the round's %v", rd.Name, rd.CPU, rd.Rounds[0].ServerCPU)
		}
		// The floor answers every read but the one with core memory.
		if floor := rd.Name != "ctx-4k+b"; (len(rd.FloorRounds) == 1) != floor || (rd.FloorPass != nil) != floor ||
			floor && (rd.FloorRounds[0].Requests == 0 || rd.FloorRounds[0].Errors != 0) {
			t.Errorf("%s: floor rounds %+v, verdict %v; want one round without errors: %v", rd.Name, rd.FloorRounds, rd.FloorPass, floor)
		}
	}
	if c.Pass != pass {
		t.Errorf("pass = %v, want %v (every context read's)", c.Pass, pass)
	}
	if entries, _ := os.ReadDir(e.tmp); len(entries) != 0 {
		t.Errorf("left %d entries in the temporary directory, want none", len(entries))
	}
	for _, want := range []string{"(g) context reads", "ctx-4k+b", "(g2) concurrent context reads", "÷ page-50's",
		"goal: a context read of a 300-message session", "context   ctx-4k p50 ms", "÷ floor's", "ctx-all CPU ÷ floor"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	var back struct {
		Context *contextReport `json:"context"`
	}
	if err := json.Unmarshal(mustIndentJSON(&rep), &back); err != nil || back.Context == nil ||
		len(back.Context.Reads) != len(c.Reads) || back.Context.Reads[1].P50Ms != c.Reads[1].P50Ms {
		t.Errorf("JSON summary's context = %+v (%v), want %+v", back.Context, err, c)
	}
}

// The conversation the section fills its session with: a system prompt, then
// user and assistant in turn, contents of 100-400 characters, tokens 20-200,
// the same on every run.
func TestConversation(t *testing.T) {
	a, b := newConversation(), newConversation()
	for i := range 2000 {
		m, m2 := a.next(), b.next()
		role, content, tokens := m["role"].(string), m["content"].(string), m["tokens"].(int)
		want := map[bool]string{true: "user", false: "assistant"}[i%2 == 1]
		if i == 0 {
			want = "system"
		}
		if role != want {
			t.Fatalf("message %d is %s, want %s", i, role, want)
		}
		if len(content) < 100 || len(content) > 400 || tokens < 20 || tokens > 200 {
			t.Fatalf("message %d: %d characters, %d tokens; want 100-400 and 20-200: %q", i, len(content), tokens, content)
		}
		if m2["content"] != content || m2["tokens"] != tokens {
			t.Fatalf("message %d differs between two conversations", i)
		}
	}
}

func TestContextFlags(t *testing.T) {
	o, err := parseFlags([]string{"-server", "x", "-only", "context"})
	if err != nil || o.only != "context" || o.contextMessages != 10000 || o.contextReps != 200 || o.contextClients != 8 ||
		o.contextRounds != 2 {
		t.Errorf("parseFlags: %+v (%v); want -only context and the context defaults 10000, 200, 8, 2", o, err)
	}
	if _, err := parseFlags([]string{"-server", "x", "-context-messages", "99"}); err == nil {
		t.Error("-context-messages 99 accepted, want at least 100")
	}
	if _, err := parseFlags([]string{"-server", "x", "-context-rounds", "0"}); err == nil {
		t.Error("-context-rounds 0 accepted")
	}
}
