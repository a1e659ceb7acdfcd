package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// The example as it is meant to be used, all real processes: a server built
// from this tree, the example killed by SIGKILL mid-turn (its tool call
// stored, its result not), a second run that resumes, repairs and finishes,
// and a third that finds nothing left to do.
func TestCrashMidTurnThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server and the example")
	}
	dir := t.TempDir()
	serverBin, exampleBin := filepath.Join(dir, "server"), filepath.Join(dir, "agentloop")
	for bin, pkg := range map[string]string{serverBin: "github.com/logbook/logbook/cmd/server", exampleBin: "."} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	url := startServer(t, serverBin, filepath.Join(dir, "logbook.db"))
	ctx := context.Background()
	lb, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	example := func(args ...string) (string, error) {
		cmd := exec.Command(exampleBin, append([]string{"-server", url, "-session", "demo"}, args...)...)
		cmd.Env = append(os.Environ(), "LOGBOOK_API_KEY=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// 1. Killed right after the assistant's tool call was stored.
	out, err := example("-crash-at", "tool-call")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("first run: %v, want death by SIGKILL\n%s", err, out)
	}
	if !strings.Contains(out, "crash: SIGKILL after storing tool call call_4") {
		t.Fatalf("first run did not crash where it should:\n%s", out)
	}
	r, err := lb.Resume(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if r.Session.LastSeq != 4 || r.Checkpoint == nil || r.Checkpoint.Iteration != 1 || r.Checkpoint.LastSeq != 2 {
		t.Fatalf("after the crash: last_seq %d, checkpoint %+v; want 4, iteration 1 at last_seq 2", r.Session.LastSeq, r.Checkpoint)
	}
	if r.Validation.Ok || len(r.Validation.Problems) != 1 || r.Validation.Problems[0].Code != api.ResumeProblemCodeUnansweredToolCall {
		t.Fatalf("after the crash, resume validation = %+v, want one unanswered_tool_call", r.Validation)
	}

	// 2. A second process takes over and finishes the turn.
	out, err = example()
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	for _, want := range []string{"resuming from checkpoint 1 (last_seq 2), 2 messages after it",
		"resume found unanswered_tool_call at seq 4", "repaired: seq 5 answers call_4 (is_error true)", "done: 8 messages, checkpoint 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("second run's output lacks %q:\n%s", want, out)
		}
	}
	checkFinalHistory(t, lb)

	// 3. Run again: the conversation is over, nothing is written.
	if out, err = example(); err != nil || !strings.Contains(out, "done: 8 messages, checkpoint 3") {
		t.Fatalf("third run: %v\n%s", err, out)
	}
	checkFinalHistory(t, lb)
}

func checkFinalHistory(t *testing.T, lb *client.Client) {
	t.Helper()
	ctx := context.Background()
	var got []string
	var msgs []api.Message
	for m, err := range lb.ListMessages(ctx, "demo", nil) {
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
		line := fmt.Sprintf("%d %s", m.Seq, m.Role)
		for _, c := range m.ToolCalls {
			line += " call " + c.ID + " " + c.Name
		}
		if m.ToolCallID != nil {
			line += fmt.Sprintf(" answers %s error=%v", *m.ToolCallID, m.IsError)
		}
		got = append(got, line)
	}
	want := []string{
		"1 user",
		"2 assistant",
		"3 user",
		"4 assistant call call_4 lookup_order", // the crash came here
		"5 tool answers call_4 error=true",     // repair's "interrupted"
		"6 assistant call call_6 lookup_order", // the model calls again
		"7 tool answers call_6 error=false",
		"8 assistant",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, ok := msgs[4].Metadata["logbook_repair"]; !ok {
		t.Errorf("seq 5 metadata = %v, want the logbook_repair mark", msgs[4].Metadata)
	}
	if text := client.TextOf(msgs[7].Content); text != "Order 1042 is delivered and refundable: I have started your refund." {
		t.Errorf("the final answer is %q", text)
	}

	var cks []string
	for ck, err := range lb.ListCheckpoints(ctx, "demo", nil) {
		if err != nil {
			t.Fatal(err)
		}
		cks = append(cks, fmt.Sprintf("%d@%d %s", ck.Iteration, ck.LastSeq, deref(ck.State.StopReason)))
	}
	if want := "3@8 end_turn, 2@7 tool_use, 1@2 end_turn"; strings.Join(cks, ", ") != want {
		t.Errorf("checkpoints = %s, want %s", strings.Join(cks, ", "), want)
	}
	r, err := lb.Resume(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Validation.Ok || r.Session.LastSeq != 8 || r.Session.TurnCount != 2 {
		t.Errorf("final resume: ok %v, last_seq %d, turn_count %d; want ok, 8, 2", r.Validation.Ok, r.Session.LastSeq, r.Session.TurnCount)
	}
}

// startServer starts the server binary on a free loopback port and answers
// its URL, read from the "listening" log line; the test's end stops it.
func startServer(t *testing.T, bin, db string) string {
	t.Helper()
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--db", db, "--log-level", "warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var line struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "listening" {
				addr <- line.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("the server logged no listening line in 30s")
		return ""
	}
}
