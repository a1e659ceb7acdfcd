package transfer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// sampleExport writes a small but complete export: a session, a file of two
// chunks, messages referencing it, checkpoints and a compaction.
func sampleExport(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	e := NewWriter(&b)
	data := bytes.Repeat([]byte("x"), model.MaxFileChunk+10)
	sum := sha256.Sum256(data)
	f := model.File{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), MediaType: "text/plain", CreatedAt: 1000}
	f.ID = model.FileIDOf(f.SHA256, f.MediaType)
	msgs := []model.Message{
		{ID: "m1", SessionID: "s", Seq: 1, Role: model.RoleUser, Content: model.Content{Parts: []model.Part{{Type: "file", FileID: f.ID}}},
			Tokens: 2, Cost: 0.5, Metadata: model.Object("{}"), CreatedAt: 1001},
		{ID: "m2", SessionID: "s", Seq: 2, Role: model.RoleAssistant, Content: model.TextContent("hi"), Tokens: 3,
			Metadata: model.Object("{}"), CreatedAt: 1002},
	}
	ses := model.Session{ID: "s", Status: model.StatusActive, Metadata: model.Object("{}"), MessageCount: 2, LastSeq: 2,
		TotalTokens: 5, TotalCost: 0.5, CreatedAt: 1000, UpdatedAt: 1002}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.Session(&ses))
	fl := e.File(f)
	must(fl.Chunk(data[:model.MaxFileChunk]))
	must(fl.Chunk(data[model.MaxFileChunk:]))
	must(fl.Done())
	for i := range msgs {
		must(e.Message(&msgs[i]))
	}
	for it := int64(1); it <= 2; it++ {
		state := []byte(`{"step":` + string(rune('0'+it)) + `}`)
		c := model.Checkpoint{ID: "c" + string(rune('0'+it)), SessionID: "s", Iteration: it, LastSeq: 2, State: state,
			SHA256: ckstate.Hash(it, 2, state), CreatedAt: 1003}
		must(e.Checkpoint(&c))
	}
	must(e.Compaction(&model.Compaction{ID: "p1", SessionID: "s", ThroughSeq: 1, Summary: model.TextContent("s"), CreatedAt: 1004}))
	must(e.End())
	return b.Bytes()
}

func parseErr(t *testing.T, export []byte) *model.Error {
	t.Helper()
	sp, err := Parse(bytes.NewReader(export))
	if err == nil {
		sp.Close()
		t.Fatal("the import was taken")
	}
	return model.AsError(err)
}

func TestWriterEndLine(t *testing.T) {
	export := sampleExport(t)
	lines := bytes.SplitAfter(export, []byte("\n"))
	last := lines[len(lines)-2] // SplitAfter leaves an empty tail
	body := export[:len(export)-len(last)]
	var end model.ExportLine
	if err := json.Unmarshal(last, &end); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if end.Type != model.LineEnd || end.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("end line %s does not hash the lines before it", last)
	}
	want := model.ExportCounts{Messages: 2, Checkpoints: 2, Files: 1, Compactions: 1}
	if *end.Counts != want {
		t.Fatalf("counts %+v, want %+v", *end.Counts, want)
	}
}

func TestFileLinesCorrupted(t *testing.T) {
	f := model.File{ID: "file_x", Size: 4}
	for name, do := range map[string]func(fl *FileLines) error{
		"short":     func(fl *FileLines) error { _ = fl.Chunk([]byte("abc")); return fl.Done() },
		"past size": func(fl *FileLines) error { return fl.Chunk([]byte("abcde")) },
		"too big": func(fl *FileLines) error {
			return (&Writer{}).File(model.File{ID: "file_x", Size: 1 << 30}).Chunk(make([]byte, model.MaxFileChunk+1))
		},
	} {
		var b bytes.Buffer
		if err := do(NewWriter(&b).File(f)); model.AsError(err).Code != "corrupted" {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var b bytes.Buffer
	fl := NewWriter(&b).File(model.File{ID: "file_e"})
	if err := fl.Chunk(nil); err != nil {
		t.Fatal(err)
	}
	if err := fl.Done(); err != nil || !strings.Contains(b.String(), `"data":""`) {
		t.Fatalf("empty file: %v %s", err, b.String())
	}
}

func TestWriterWriteError(t *testing.T) {
	boom := errors.New("gone")
	e := NewWriter(errWriter{boom})
	if err := e.Session(&model.Session{ID: "s"}); !errors.Is(err, boom) {
		t.Fatalf("%v", err)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

func TestParseRoundTrip(t *testing.T) {
	export := sampleExport(t)
	sp, err := Parse(bytes.NewReader(export))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for try := 0; try < 2; try++ { // a retried write reads it all again
		lines, err := sp.Lines()
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for {
			n, l, err := lines.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != len(types)+1 {
				t.Fatalf("line %d numbered %d", len(types)+1, n)
			}
			types = append(types, l.Type)
		}
		if got := strings.Join(types, " "); got != "session file file message message checkpoint checkpoint compaction" {
			t.Fatalf("spooled %s", got)
		}
	}
}

// rehash gives edited lines a correct end line, so that the check under test
// is reached rather than the checksum's.
func rehash(t *testing.T, export []byte, edit func(n int, l map[string]any)) []byte {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(export, []byte("\n")), []byte("\n"))
	var out bytes.Buffer
	h := sha256.New()
	for i, raw := range lines[:len(lines)-1] {
		var l map[string]any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&l); err != nil {
			t.Fatal(err)
		}
		edit(i+1, l)
		b, _ := json.Marshal(l)
		b = append(b, '\n')
		h.Write(b)
		out.Write(b)
	}
	var end model.ExportLine
	_ = json.Unmarshal(lines[len(lines)-1], &end)
	end.SHA256 = hex.EncodeToString(h.Sum(nil))
	b, _ := json.Marshal(end)
	out.Write(append(b, '\n'))
	return out.Bytes()
}

func TestParseRefuses(t *testing.T) {
	export := sampleExport(t)
	obj := func(l map[string]any, k string) map[string]any { return l[k].(map[string]any) }
	raws := bytes.Split(export, []byte("\n"))
	cases := []struct {
		name, code, msg string
		body            []byte
	}{
		{"empty", "malformed_json", "line 1: the import is empty", nil},
		{"bad checksum", "invalid_import", "line 9: sha256 does not match",
			bytes.Replace(export, []byte(`"hi"`), []byte(`"ho"`), 1)},
		{"truncated", "invalid_import", "line 9: the stream ends without its end line", export[:bytes.LastIndexByte(export[:len(export)-1], '\n')+1]},
		{"cut mid-line", "invalid_import", "line 9: the stream ends in the middle of a line", export[:len(export)-5]},
		// The end line's hash no longer matches either: the checksum is told
		// first, as a damaged line is more likely damage than a bad export.
		{"not json", "invalid_import", "sha256 does not match", append([]byte("{not json\n"), export...)},
		{"not json, nothing after", "malformed_json", "line 1:", []byte("{not json\n")},
		{"seq gap", "invalid_import", "line 5: message.seq is 3, want 2", rehash(t, export, func(n int, l map[string]any) {
			if n == 5 {
				obj(l, "message")["seq"] = 3
			}
		})},
		{"repeated id", "invalid_import", `line 5: message.id "m1" repeats line 4`, rehash(t, export, func(n int, l map[string]any) {
			if n == 5 {
				obj(l, "message")["id"] = "m1"
			}
		})},
		{"checkpoint hash", "invalid_import", "line 7: checkpoint.sha256 does not match", rehash(t, export, func(n int, l map[string]any) {
			if n == 7 {
				obj(l, "checkpoint")["last_seq"] = 1
			}
		})},
		{"out of order", "invalid_import", "line 7: a checkpoint line after the compaction lines", rehash(t, export, func(n int, l map[string]any) {
			if n == 6 || n == 8 { // the first checkpoint and the compaction change places
				clear(l)
				_ = json.Unmarshal(raws[13-n], &l)
			}
		})},
		{"counts", "invalid_import", "line 1: session.total_tokens is 6", rehash(t, export, func(n int, l map[string]any) {
			if n == 1 {
				obj(l, "session")["total_tokens"] = 6
			}
		})},
	}
	for _, c := range cases {
		e := parseErr(t, c.body)
		if e.Code != c.code || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%s: %s %q, want %s %q", c.name, e.Code, e.Msg, c.code, c.msg)
		}
	}
}

func TestParseLongLine(t *testing.T) {
	long := append([]byte(`{"type":"session","session":{"title":"`), bytes.Repeat([]byte("a"), MaxLine)...)
	long = append(long, "\"}}\n"...)
	e := parseErr(t, long)
	if e.Code != "invalid_import" || !strings.HasPrefix(e.Msg, "line 1: the line is longer than") {
		t.Fatalf("%+v", e)
	}
}

func TestReadLineBound(t *testing.T) {
	in := strings.Repeat("a", 100) + "\nshort\n" + "tail"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	h := sha256.New()
	raw, whole, err := readLine(br, nil, 10, h)
	if err != nil || whole || string(raw) != strings.Repeat("a", 10) {
		t.Fatalf("%q %v %v", raw, whole, err)
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), sha(strings.Repeat("a", 100)+"\n"); got != want {
		t.Fatal("the long line was not hashed whole")
	}
	raw, whole, err = readLine(br, raw[:0], 10, h)
	if err != nil || !whole || string(raw) != "short\n" {
		t.Fatalf("%q %v %v", raw, whole, err)
	}
	raw, whole, err = readLine(br, raw[:0], 10, h)
	if err != io.EOF || !whole || string(raw) != "tail" {
		t.Fatalf("%q %v %v", raw, whole, err)
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Parse(iotest.ErrReader(boom))
	if e := model.AsError(err); e.Code != "malformed_json" || !errors.Is(err, boom) {
		t.Fatalf("%v", err)
	}
}

func TestSpoolMovesToFile(t *testing.T) {
	sp := &Spool{}
	line := append(bytes.Repeat([]byte(`{"type":"x"}`), 1000), '\n') // not decoded here
	var want bytes.Buffer
	for want.Len() <= SpoolMemory {
		if err := sp.write(line); err != nil {
			t.Fatal(err)
		}
		want.Write(line)
	}
	if sp.file == nil {
		t.Fatal("still in memory past SpoolMemory")
	}
	name := sp.file.Name()
	lines, err := sp.Lines()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(lines.br)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read back %d bytes, want %d (%v)", len(got), want.Len(), err)
	}
	sp.Close()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Fatalf("the temporary file is still there: %v", err)
	}
}

func TestCheckpointRows(t *testing.T) {
	var blob strings.Builder // incompressible, so that a delta pays
	for i := range 64 {
		blob.WriteString(sha(strings.Repeat("z", i)))
	}
	big := map[string]any{"blob": blob.String(), "step": 1}
	var cr CheckpointRows
	var deltas int
	for it := int64(1); it <= 3; it++ {
		big["step"] = it
		state, _ := json.Marshal(big)
		if it == 3 {
			state = []byte(`{"step":3, "blob":"` + blob.String() + `","pause_until_ms":5}`)
		}
		c := model.Checkpoint{Iteration: it, State: state}
		stored, delta, err := cr.Next(&c)
		if err != nil {
			t.Fatal(err)
		}
		canon, _ := ckstate.Canonical(state)
		if !bytes.Equal(c.State, canon) || stored.Size() == 0 {
			t.Fatalf("iteration %d: state %s not canonical", it, c.State)
		}
		if it == 1 && delta != nil {
			t.Fatal("a delta with nothing before it")
		}
		if delta != nil {
			deltas++
			if delta.Iteration != it-1 {
				t.Fatalf("delta for %d at %d", delta.Iteration, it)
			}
		}
	}
	if deltas != 2 {
		t.Fatalf("%d deltas, want 2", deltas)
	}
	if p := cr.PauseUntil(); p == nil || *p != 5 {
		t.Fatalf("pause %v", p)
	}
	if _, _, err := cr.Next(&model.Checkpoint{State: []byte(`[1]`)}); err == nil {
		t.Fatal("a state that is not an object was taken")
	}
}

func TestConflictNamesLine(t *testing.T) {
	e := Conflict(7, "a session with id %q already exists", "s")
	if e.Kind != model.KindConflict || e.Msg != `line 7: a session with id "s" already exists` || e.Fields[0].Field != "line 7" {
		t.Fatalf("%+v", e)
	}
	if m := MissingFile(3, 2); m.Code != "invalid_import" || !strings.Contains(m.Msg, "line 3: message.content[2].file_id") {
		t.Fatalf("%+v", m)
	}
}
