package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The fairness section end to end, briefly, against a server built from
// ../server: two tenants made by the server's own commands, both loads, the
// catch-up of search and the report.
func TestFairnessSection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server; skipped with -short")
	}
	e := &env{serverBin: buildServer(t), tmp: t.TempDir(), client: newClient()}
	defer e.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	f, err := fairnessRun(ctx, e, fairnessConfig{duration: time.Second, aBursts: 1})
	if err != nil {
		t.Fatal(err)
	}
	// 2 clients, one send every 100–200 ms each, for 1s: 10 to 20 sends.
	for name, l := range map[string]latencies{"B alone": f.BAlone, "B with A": f.BWithA} {
		if l.Count < 8 || l.Count > 22 || l.Errors != 0 {
			t.Errorf("%s: %d appends, %d errors; want about 10 to 20 and none", name, l.Count, l.Errors)
		}
		if !(0 < l.P50Ms && l.P50Ms <= l.P99Ms && l.P99Ms <= l.MaxMs) {
			t.Errorf("%s: p50 %v, p99 %v, max %v ms; want 0 < p50 <= p99 <= max", name, l.P50Ms, l.P99Ms, l.MaxMs)
		}
	}
	if f.BApart.Count > f.BWithA.Count {
		t.Errorf("%d of B's %d appends overlapped no A append: more than there are", f.BApart.Count, f.BWithA.Count)
	}
	if got, want := f.A.Count, fairABurst; got != want {
		t.Errorf("A appended %d messages, want %d (one burst)", got, want)
	}
	if got, want := f.Ratio, f.BWithA.P99Ms/f.BAlone.P99Ms; got != want {
		t.Errorf("ratio = %v, want %v", got, want)
	}
	if !f.CaughtUp || f.IndexLag != 0 || !f.Found {
		t.Errorf("search: caught up %v, index_lag %d, last word found %v; want true, 0, true", f.CaughtUp, f.IndexLag, f.Found)
	}
	if entries, _ := os.ReadDir(e.tmp); len(entries) != 0 {
		t.Errorf("left %d entries in the temporary directory, want none", len(entries))
	}

	var rep report
	var out bytes.Buffer
	rep.setFairness(&out, f)
	rep.summary(&out)
	t.Log(out.String())
	for _, want := range []string{"B alone", "B with A", "B p99 with A / alone", "search caught up", "fairness  B p99 with A/alone"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	var back struct {
		Fairness *fairnessReport `json:"fairness"`
	}
	if err := json.Unmarshal(mustIndentJSON(&rep), &back); err != nil || back.Fairness == nil || back.Fairness.BWithA != f.BWithA {
		t.Errorf("JSON summary's fairness = %+v (%v), want B with A %+v", back.Fairness, err, f.BWithA)
	}
}

func TestBigMessageIsJSON(t *testing.T) {
	text := wordsTexts(1, 1000)[0]
	var m struct {
		Role, Content string
		Tokens        int
	}
	if err := json.Unmarshal(bigMessage(text, "bigmsg7"), &m); err != nil || m.Role != "user" || m.Content != text+" bigmsg7" {
		t.Errorf("bigMessage decodes to role %q, content %.20q… (%v); want user, the text and the marker", m.Role, m.Content, err)
	}
}

func TestApartKeepsOnlyRequestsOverlappingNone(t *testing.T) {
	t0 := time.Now()
	at := func(a, b int) span {
		return span{t0.Add(time.Duration(a) * time.Millisecond), t0.Add(time.Duration(b) * time.Millisecond)}
	}
	b := &timings{spans: []span{at(0, 5), at(9, 12), at(20, 30), at(40, 41)}}
	a := &timings{spans: []span{at(10, 15), at(25, 26)}}
	if got, want := b.apart(a).spans, []span{at(0, 5), at(40, 41)}; !slices.Equal(got, want) {
		t.Errorf("apart = %v, want %v", got, want)
	}
}

func TestRankFromTop(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{1, "largest"}, {99, "largest"}, {100, "2nd largest"}, {197, "2nd largest"}, {204, "3rd largest"},
		{1150, "12th largest"}, {2100, "22nd largest"}} {
		if got := largest(rankFromTop(c.n, 99)); got != c.want {
			t.Errorf("p99 of %d is the %s, want the %s", c.n, got, c.want)
		}
	}
}

func TestFairnessFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{{nil, true}, {[]string{"-fairness=false"}, false}} {
		o, err := parseFlags(append([]string{"-server", "x"}, c.args...))
		if err != nil || o.fairness != c.want || o.fairnessDur != 15*time.Second {
			t.Errorf("parseFlags(%q): fairness %v, duration %v (%v); want %v, 15s", c.args, o.fairness, o.fairnessDur, err, c.want)
		}
	}
}

// buildServer builds ../server as cmd/server's own tests do, with the go
// command named by $GO or found on PATH.
func buildServer(t *testing.T) string {
	t.Helper()
	goBin := os.Getenv("GO")
	if goBin == "" {
		p, err := exec.LookPath("go")
		if err != nil {
			t.Fatalf("no go command to build the server with (set GO): %v", err)
		}
		goBin = p
	}
	bin := filepath.Join(t.TempDir(), "logbook-server")
	if out, err := exec.Command(goBin, "build", "-o", bin, "../server").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
