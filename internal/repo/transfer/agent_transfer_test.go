package transfer

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// sampleAgentExport writes an agent export with a block, a passage with an
// embedding and sampleExport's session.
func sampleAgentExport(t *testing.T, agentID string) []byte {
	t.Helper()
	var b bytes.Buffer
	e, err := NewAgentWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	embModel, dims := "e", 2
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.Agent(&model.ExportAgent{Agent: model.Agent{ID: agentID, Name: "n", AgentType: "memgpt_agent", ToolIDs: []string{},
		Tags: []string{}, Metadata: model.Object("{}"), CreatedAt: 1, UpdatedAt: 1}, EmbeddingModel: &embModel, EmbeddingDims: &dims}))
	must(e.Block(&model.ExportBlock{ID: "b1", Label: "human", Value: "v", Limit: 10, Version: 1, UpdatedAt: 1}))
	must(e.Passage(&model.ExportPassage{ID: "p1", Content: "c", Tags: []string{}, Metadata: model.Object("{}"), CreatedAt: 1,
		Embedding: []float32{0.1, -0.2}, EmbeddingModel: "e"}))
	ses := strings.Replace(string(sampleExport(t)), `"agent_id":null`, `"agent_id":"`+agentID+`"`, 1)
	// sampleExport's end line covers its own lines: reseal it after the edit.
	lines := strings.SplitAfter(ses, "\n")
	sw := e.Session()
	for _, l := range lines {
		if strings.HasPrefix(l, `{"type":"end"`) || l == "" {
			continue
		}
		if _, err := sw.w.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
		sw.h.Write([]byte(l))
		switch {
		case strings.HasPrefix(l, `{"type":"message"`):
			sw.counts.Messages++
		case strings.HasPrefix(l, `{"type":"checkpoint"`):
			sw.counts.Checkpoints++
		case strings.HasPrefix(l, `{"type":"compaction"`):
			sw.counts.Compactions++
		}
	}
	sw.counts.Files = 1
	must(sw.End())
	must(e.End())
	return b.Bytes()
}

func TestParseAgentRoundTrip(t *testing.T) {
	good := sampleAgentExport(t, "a")
	sp, err := ParseAgent(bytes.NewReader(good))
	if err != nil {
		t.Fatalf("%v\n%s", err, good)
	}
	defer sp.Close()
	lines, err := sp.Lines()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for {
		_, a, l, err := lines.NextAgent()
		if err != nil {
			break
		}
		types = append(types, a.Type+l.Type)
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "header agent block passage session file file message") || !strings.HasSuffix(got, " end") {
		t.Errorf("spooled lines: %s", got)
	}
}

// Hostile or damaged agent exports are refused with the line they fail on.
func TestParseAgentRefuses(t *testing.T) {
	good := string(sampleAgentExport(t, "a"))
	lines := strings.SplitAfter(good, "\n")
	lines = lines[:len(lines)-1] // SplitAfter leaves "" after the last newline
	n := len(lines)
	join := func(ls ...string) string { return strings.Join(ls, "") }
	cases := []struct {
		name, body, code, want string
	}{
		{"empty", "", "malformed_json", "line 1"},
		{"a session export", string(sampleExport(t)), "invalid_import", "line 1"},
		{"no agent_end", join(lines[:n-1]...), "invalid_import", "line " + itoa(n)},
		{"data after agent_end", good + "{}\n", "invalid_import", "line " + itoa(n+1)},
		{"cut in a line", good[:len(good)-len(lines[n-1])-len(lines[n-2])-5], "invalid_import", "line " + itoa(n-2)},
		{"a line too long", join(lines[0], `{"type":"block","block":{"value":"`+strings.Repeat("x", MaxLine)+`"}}`+"\n"), "invalid_import", "line 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := ParseAgent(strings.NewReader(tc.body))
			if err == nil {
				sp.Close()
				t.Fatal("accepted")
			}
			e := model.AsError(err)
			if e.Code != tc.code || len(e.Fields) == 0 || e.Fields[0].Field != tc.want {
				t.Errorf("got %s %+v, want %s naming %s", e.Code, e.Fields, tc.code, tc.want)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
