package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func withImportMax(n int64) testServerOption {
	return func(c *testConfig) { c.api.ImportMaxBytes = n }
}

// mustExport exports a session and checks the stream's shape: content type, line
// order and the end line's counts and checksum.
func mustExport(t *testing.T, c *client, id string) []byte {
	t.Helper()
	res := c.do("GET", "/v1/sessions/"+id+"/export", nil).want(t, http.StatusOK, nil)
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type = %q, want application/x-ndjson", ct)
	}
	lines := splitLines(t, res.Body)
	rank := map[string]int{model.LineEnd: 9}
	for k, v := range model.LineOrder {
		rank[k] = v
	}
	counts := map[string]int64{}
	files := map[string]bool{}
	prev := 0
	for i, l := range lines {
		var line model.ExportLine
		if err := json.Unmarshal(l, &line); err != nil {
			t.Fatalf("line %d: %v: %.300s", i+1, err, l)
		}
		r, ok := rank[line.Type]
		if !ok || r < prev || (i == 0) != (line.Type == model.LineSession) || (i == len(lines)-1) != (line.Type == model.LineEnd) {
			t.Fatalf("line %d of %d is a %q line: out of order", i+1, len(lines), line.Type)
		}
		prev = r
		counts[line.Type]++
		if line.File != nil {
			files[line.File.ID] = true
		}
		if line.Type == model.LineEnd {
			sum := sha256.Sum256(res.Body[:len(res.Body)-len(l)])
			if line.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("end line sha256 %s, want %x", line.SHA256, sum)
			}
			if line.Counts.Messages != counts[model.LineMessage] || line.Counts.Checkpoints != counts[model.LineCheckpoint] ||
				line.Counts.Compactions != counts[model.LineCompaction] || line.Counts.Files != int64(len(files)) ||
				line.Counts.CheckpointWrites != counts[model.LineCheckpointWrite] {
				t.Errorf("end line counts %+v, the export holds %v", *line.Counts, counts)
			}
		}
	}
	return res.Body
}

// splitLines splits an export into its lines, each with its newline.
func splitLines(t *testing.T, b []byte) [][]byte {
	t.Helper()
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("export does not end in a newline: %q", b)
	}
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

// reseal replaces the end line with one that matches the lines before it, so a
// test can change the content and still pass the checksum.
func reseal(t *testing.T, lines [][]byte) []byte {
	t.Helper()
	body := bytes.Join(lines[:len(lines)-1], nil)
	counts := model.ExportCounts{}
	files := map[string]bool{}
	for _, l := range lines[:len(lines)-1] {
		switch {
		case bytes.HasPrefix(l, []byte(`{"type":"file"`)):
			var line model.ExportLine
			if json.Unmarshal(l, &line) == nil && line.File != nil && !files[line.File.ID] {
				files[line.File.ID] = true
				counts.Files++
			}
		case bytes.HasPrefix(l, []byte(`{"type":"compaction"`)):
			counts.Compactions++
		case bytes.HasPrefix(l, []byte(`{"type":"message"`)):
			counts.Messages++
		case bytes.HasPrefix(l, []byte(`{"type":"checkpoint",`)):
			counts.Checkpoints++
		case bytes.HasPrefix(l, []byte(`{"type":"checkpoint_write",`)):
			counts.CheckpointWrites++
		}
	}
	sum := sha256.Sum256(body)
	end, _ := json.Marshal(model.ExportLine{Type: model.LineEnd, Counts: &counts, SHA256: hex.EncodeToString(sum[:])})
	return append(body, append(end, '\n')...)
}

func importNDJSON(c *client, body []byte, query string) *response {
	return c.do("POST", "/v1/sessions/import"+query, body, "Content-Type", "application/x-ndjson")
}

func mustImport(t *testing.T, c *client, body []byte, query string) model.Session {
	t.Helper()
	var ses model.Session
	res := importNDJSON(c, body, query).want(t, http.StatusCreated, &ses)
	if loc := res.Header.Get("Location"); loc != "/v1/sessions/"+ses.ID {
		t.Errorf("Location = %q, want /v1/sessions/%s", loc, ses.ID)
	}
	return ses
}

// richSession makes a closed session with tool calls, metadata, several
// checkpoints and enough messages to cross the export's 500-message chunks.
func richSession(t *testing.T, c *client) model.Session {
	t.Helper()
	s := mustCreateSession(t, c, map[string]any{"agent_id": "support-bot", "title": "Refund <for> order & 1234",
		"metadata": map[string]any{"customer": "c_42", "priority": 2, "big": json.Number("123456789012345678901234567890"),
			"nested": map[string]any{"z": []any{1.5, true, nil}, "a": "ü"}}})
	mustAppend(t, c, s.ID, map[string]any{"role": "system", "content": "You are helpful."})
	mustAppend(t, c, s.ID, userMsg("Where is my teapot refund?"))
	mustAppend(t, c, s.ID, map[string]any{"role": "assistant", "content": "", "model": "gpt-x", "tokens": 20, "cost": 0.1 + 0.2,
		"tool_calls": []map[string]any{{"id": "call_1", "name": "lookup", "arguments": `{"order": 1234}`}},
		"metadata":   map[string]any{"latency_ms": 812}})
	mustAppend(t, c, s.ID, map[string]any{"role": "tool", "tool_call_id": "call_1", "name": "lookup", "content": `{"status":"refunded"}`})
	putCheckpoint(c, s.ID, 1, nil, map[string]any{"pending_tool_calls": []any{}, "stop_reason": nil}).want(t, http.StatusCreated, nil)
	batch := make([]map[string]any, 600)
	for i := range batch {
		batch[i] = map[string]any{"role": "user", "content": fmt.Sprintf("line %d of a long history", i), "tokens": i, "cost": 0.001}
	}
	c.do("POST", "/v1/sessions/"+s.ID+"/messages", map[string]any{"messages": batch}).want(t, http.StatusCreated, nil)
	putCheckpoint(c, s.ID, 2, nil, map[string]any{"pause_until_ms": 1795319814323, "scratch": "<b>&</b>"}).want(t, http.StatusCreated, nil)
	mustAppend(t, c, s.ID, map[string]any{"role": "assistant", "content": "Your refund is on its way. 🫖"})
	putCheckpoint(c, s.ID, 5, nil, map[string]any{"stop_reason": "end_turn", "last_tool_result": map[string]any{"ok": true}}).
		want(t, http.StatusCreated, nil)
	var closed model.Session
	c.do("DELETE", "/v1/sessions/"+s.ID, nil).want(t, http.StatusOK, &closed)
	return closed
}

func TestExportImportRoundTrip(t *testing.T) {
	src := newClient(t)
	orig := richSession(t, src)
	first := mustExport(t, src, orig.ID)
	lines := splitLines(t, first)
	if got, want := len(lines), 1+605+3+1; got != want {
		t.Fatalf("export has %d lines, want %d", got, want)
	}

	dst := newClient(t)
	got := mustImport(t, dst, first, "")
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(mustGetSession(t, src, orig.ID))
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("imported session\n got %s\nwant %s", gotJSON, wantJSON)
	}
	second := mustExport(t, dst, got.ID)
	if !bytes.Equal(first, second) {
		t.Fatalf("export → import → export changed the bytes:\n%s", firstDiff(first, second))
	}

	// The imported session is a working one: checkpoints verify, it resumes, its
	// messages are found by search, and appending continues its seqs and counters.
	var cps model.Page[model.Checkpoint]
	dst.do("GET", "/v1/sessions/"+got.ID+"/checkpoints", nil).want(t, http.StatusOK, &cps)
	if len(cps.Data) != 3 || cps.Data[0].Iteration != 5 {
		t.Errorf("checkpoints after import: %+v", cps.Data)
	}
	var due model.Page[model.Session]
	dst.do("GET", "/v1/sessions?due_before=2030-01-01T00:00:00Z", nil).want(t, http.StatusOK, &due)
	if len(due.Data) != 0 {
		t.Errorf("the latest checkpoint has no pause_until_ms, yet the session is listed as due: %+v", due.Data)
	}
	waitSearchable(t, dst)
	var hits struct{ Data []model.MessageHit }
	dst.do("GET", "/v1/messages/search?q=teapot", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 1 || hits.Data[0].SessionID != got.ID || hits.Data[0].Seq != 2 {
		t.Errorf("search after import: %+v", hits.Data)
	}
	dst.do("PATCH", "/v1/sessions/"+got.ID, map[string]any{"status": "active"}).want(t, http.StatusOK, nil)
	m := mustAppend(t, dst, got.ID, userMsg("one more"))
	after := mustGetSession(t, dst, got.ID)
	if m.Seq != orig.LastSeq+1 || after.MessageCount != orig.MessageCount+1 || after.TotalTokens != orig.TotalTokens+3 {
		t.Errorf("append after import: seq %d, session %+v (was %+v)", m.Seq, after, orig)
	}
}

// firstDiff shows where two exports part.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d\n got %s\nwant %s", i+1, lb[i], la[i])
		}
	}
	return fmt.Sprintf("%d lines vs %d", len(la), len(lb))
}

func TestExportForkAsItsOwn(t *testing.T) {
	src := newClient(t)
	parent := mustCreateSession(t, src, map[string]any{"title": "parent"})
	for i := range 4 {
		mustAppend(t, src, parent.ID, userMsg(fmt.Sprintf("parent %d", i+1)))
	}
	var fork model.Session
	src.do("POST", "/v1/sessions/"+parent.ID+"/fork", map[string]any{"at_seq": 2}).want(t, http.StatusCreated, &fork)
	mustAppend(t, src, fork.ID, userMsg("fork's own"))
	putCheckpoint(src, fork.ID, 1, nil, map[string]any{"n": 1}).want(t, http.StatusCreated, nil)

	first := mustExport(t, src, fork.ID)
	var contents []string
	for _, l := range splitLines(t, first) {
		var line model.ExportLine
		if err := json.Unmarshal(l, &line); err != nil {
			t.Fatal(err)
		}
		switch line.Type {
		case model.LineSession:
			if line.Session.ID != fork.ID || *line.Session.ParentID != parent.ID || *line.Session.ForkedAtSeq != 2 {
				t.Errorf("session line %s", l)
			}
		case model.LineMessage:
			if line.Message.SessionID != fork.ID || line.Message.Seq != int64(len(contents)+1) {
				t.Errorf("message line %s", l)
			}
			contents = append(contents, line.Message.Content.Text)
		}
	}
	if strings.Join(contents, "|") != "parent 1|parent 2|fork's own" {
		t.Errorf("fork's messages %q", contents)
	}

	// Into a server without the parent: the fork holds its messages itself.
	dst := newClient(t)
	got := mustImport(t, dst, first, "")
	if *got.ParentID != parent.ID || *got.ForkedAtSeq != 2 || got.MessageCount != 3 {
		t.Errorf("imported fork %+v", got)
	}
	msgs := listAll[model.Message](t, dst, "/v1/sessions/"+got.ID+"/messages", 2)
	if len(msgs) != 3 || msgs[0].Content.Text != "parent 1" || msgs[2].Content.Text != "fork's own" {
		t.Errorf("imported fork's messages %+v", msgs)
	}
	if second := mustExport(t, dst, got.ID); !bytes.Equal(first, second) {
		t.Fatalf("fork export → import → export changed the bytes:\n%s", firstDiff(first, second))
	}

	// Next to its parent, as new: parent_id kept, messages its own.
	again := mustImport(t, src, first, "?as_new=true")
	if again.ID == fork.ID || *again.ParentID != parent.ID {
		t.Errorf("as_new fork %+v", again)
	}
	if msgs := listAll[model.Message](t, src, "/v1/sessions/"+again.ID+"/messages", 50); len(msgs) != 3 || msgs[0].SessionID != again.ID {
		t.Errorf("as_new fork's messages %+v", msgs)
	}
}

func TestImportAsNewTwice(t *testing.T) {
	c := newClient(t)
	orig := mustCreateSession(t, c, map[string]any{"id": "my-session", "metadata": map[string]any{"k": "v"}})
	mustAppend(t, c, orig.ID, userMsg("hello"))
	mustAppend(t, c, orig.ID, userMsg("again"))
	putCheckpoint(c, orig.ID, 3, nil, map[string]any{"n": 3}).want(t, http.StatusCreated, nil)
	orig = mustGetSession(t, c, orig.ID)
	export := mustExport(t, c, orig.ID)

	importNDJSON(c, export, "").wantProblem(t, http.StatusConflict, "conflict")
	seen := map[string]bool{orig.ID: true}
	origMsgs := listAll[model.Message](t, c, "/v1/sessions/"+orig.ID+"/messages", 50)
	for _, m := range origMsgs {
		seen[m.ID] = true
	}
	var origCp model.Checkpoint
	c.do("GET", "/v1/sessions/"+orig.ID+"/checkpoint", nil).want(t, http.StatusOK, &origCp)
	seen[origCp.ID] = true

	for range 2 {
		s := mustImport(t, c, export, "?as_new=true")
		if !strings.HasPrefix(s.ID, model.PrefixSession) || seen[s.ID] {
			t.Fatalf("as_new session id %q", s.ID)
		}
		seen[s.ID] = true
		if s.MessageCount != 2 || s.TotalCost != orig.TotalCost || s.CreatedAt != orig.CreatedAt || string(s.Metadata) != `{"k":"v"}` {
			t.Errorf("as_new session %+v, original %+v", s, orig)
		}
		msgs := listAll[model.Message](t, c, "/v1/sessions/"+s.ID+"/messages", 50)
		for i, m := range msgs {
			if !strings.HasPrefix(m.ID, model.PrefixMessage) || seen[m.ID] || m.SessionID != s.ID ||
				m.Content.Text != origMsgs[i].Content.Text || m.CreatedAt != origMsgs[i].CreatedAt {
				t.Errorf("as_new message %+v", m)
			}
			seen[m.ID] = true
		}
		var cp model.Checkpoint
		c.do("GET", "/v1/sessions/"+s.ID+"/checkpoint", nil).want(t, http.StatusOK, &cp)
		if !strings.HasPrefix(cp.ID, model.PrefixCheckpoint) || seen[cp.ID] || cp.SHA256 != origCp.SHA256 || cp.Iteration != 3 {
			t.Errorf("as_new checkpoint %+v", cp)
		}
		seen[cp.ID] = true
	}
	if n := len(listAll[model.Session](t, c, "/v1/sessions", 50)); n != 3 {
		t.Errorf("%d sessions, want the original and two imports", n)
	}
}

// Every refused import leaves the store as it was.
func TestImportRefusedWritesNothing(t *testing.T) {
	src := newClient(t)
	s := mustCreateSession(t, src, map[string]any{"id": "exported"})
	mustAppend(t, src, s.ID, userMsg("hello world"))
	mustAppend(t, src, s.ID, userMsg("second"))
	putCheckpoint(src, s.ID, 1, nil, map[string]any{"n": 1}).want(t, http.StatusCreated, nil)
	good := mustExport(t, src, s.ID)
	lines := splitLines(t, good) // session, 2 messages, 1 checkpoint, end
	msgs := listAll[model.Message](t, src, "/v1/sessions/"+s.ID+"/messages", 50)

	// edit returns the export with line n (from 1) replaced by what f makes of it.
	edit := func(n int, f func(string) string) [][]byte {
		out := make([][]byte, len(lines))
		copy(out, lines)
		out[n-1] = []byte(f(string(lines[n-1])))
		return out
	}
	join := func(ls [][]byte) []byte { return bytes.Join(ls, nil) }
	third := []byte(strings.NewReplacer(`"seq":2`, `"seq":3`, `"id":"msg_`, `"id":"msg_y`).Replace(string(lines[2])))
	renamed := func(id string) string { return strings.ReplaceAll(string(good), `"exported"`, `"`+id+`"`) }
	const (
		malformed = http.StatusBadRequest
		invalid   = http.StatusUnprocessableEntity
		conflict  = http.StatusConflict
	)
	cases := []struct {
		name   string
		body   []byte
		status int
		code   string
		line   string
	}{
		{"flipped_byte", join(edit(2, func(l string) string { return strings.Replace(l, "hello", "hellp", 1) })), invalid, "invalid_import", "line 5"},
		{"truncated_at_a_line", join(lines[:4]), invalid, "invalid_import", "line 5"},
		{"truncated_mid_line", good[:len(good)-len(lines[4])-10], invalid, "invalid_import", "line 4"},
		{"empty", nil, malformed, "malformed_json", "line 1"},
		{"malformed_line", reseal(t, edit(3, func(string) string { return "{not json\n" })), malformed, "malformed_json", "line 3"},
		{"unknown_field", reseal(t, edit(2, func(l string) string { return strings.Replace(l, `"seq":1`, `"seq":1,"colour":"red"`, 1) })), invalid, "invalid_import", "line 2"},
		{"seq_gap", reseal(t, edit(3, func(l string) string { return strings.Replace(l, `"seq":2`, `"seq":3`, 1) })), invalid, "invalid_import", "line 3"},
		{"other_session_id", reseal(t, edit(2, func(l string) string { return strings.Replace(l, `"session_id":"exported"`, `"session_id":"other"`, 1) })), invalid, "invalid_import", "line 2"},
		{"checkpoint_hash", reseal(t, edit(4, func(l string) string { return strings.Replace(l, `"n":1`, `"n":2`, 1) })), invalid, "invalid_import", "line 4"},
		{"message_after_checkpoint", reseal(t, [][]byte{lines[0], lines[1], lines[2], lines[3], third, lines[4]}), invalid, "invalid_import", "line 5"},
		{"second_session_line", reseal(t, [][]byte{lines[0], lines[1], lines[0], lines[2], lines[3], lines[4]}), invalid, "invalid_import", "line 3"},
		{"no_session_line", reseal(t, lines[1:]), invalid, "invalid_import", "line 1"},
		{"counts", join(edit(5, func(l string) string { return strings.Replace(l, `"messages":2`, `"messages":3`, 1) })), invalid, "invalid_import", "line 5"},
		{"data_after_end", append(append([]byte{}, good...), lines[1]...), invalid, "invalid_import", "line 6"},
		{"session_exists", good, conflict, "conflict", "line 1"},
		{"message_id_exists", reseal(t, splitLines(t, []byte(renamed("fresh")))), conflict, "conflict", "line 2"},
		{"checkpoint_id_exists", reseal(t, splitLines(t, []byte(strings.ReplaceAll(renamed("fresh"), `"id":"msg_`, `"id":"msg_x`)))),
			conflict, "conflict", "line 4"},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Into the server that holds the original: every id of the export exists.
			p := importNDJSON(src, tc.body, "").wantProblem(t, tc.status, tc.code)
			if len(p.Errors) != 1 || p.Errors[0].Field != tc.line {
				t.Errorf("errors %+v, want one naming %q (detail %q)", p.Errors, tc.line, p.Detail)
			}
			if sessions := listAll[model.Session](t, src, "/v1/sessions", 50); len(sessions) != 1 || sessions[0].ID != s.ID {
				t.Errorf("sessions after a refused import: %+v", sessions)
			}
			src.do("GET", "/v1/sessions/fresh", nil).wantProblem(t, http.StatusNotFound, "not_found")
			if got := mustGetSession(t, src, s.ID); got.MessageCount != 2 || got.LastSeq != 2 {
				t.Errorf("original changed: %+v", got)
			}
		})
	}

	// Into a fresh server holding only a session of the same id: the messages of
	// the refused import do not exist afterwards.
	dst := newClient(t)
	mustCreateSession(t, dst, map[string]any{"id": "exported"})
	importNDJSON(dst, good, "").wantProblem(t, http.StatusConflict, "conflict")
	if sessions := listAll[model.Session](t, dst, "/v1/sessions", 50); len(sessions) != 1 || sessions[0].MessageCount != 0 {
		t.Errorf("sessions after a refused import: %+v", sessions)
	}
	for _, m := range msgs {
		dst.do("GET", "/v1/sessions/exported/messages/"+m.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	}
	dst.do("GET", "/v1/sessions/exported/checkpoint", nil).wantProblem(t, http.StatusNotFound, "not_found")
}

func TestImportRequestChecks(t *testing.T) {
	src := newClient(t)
	s := mustCreateSession(t, src, nil)
	mustAppend(t, src, s.ID, userMsg(strings.Repeat("x", 4000)))
	export := mustExport(t, src, s.ID)

	c := newClient(t, withImportMax(1000), withMaxBody(100))
	c.do("POST", "/v1/sessions/import", export, "Content-Type", "text/plain").wantProblem(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	importNDJSON(c, export, "").wantProblem(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	importNDJSON(c, export, "?as_new=maybe").wantProblem(t, http.StatusBadRequest, "invalid_query")
	importNDJSON(c, export, "?fresh=true").wantProblem(t, http.StatusBadRequest, "invalid_query")

	// The import limit, not the JSON body limit, applies; application/json is accepted.
	big := newClient(t, withMaxBody(100))
	var ses model.Session
	big.do("POST", "/v1/sessions/import", export).want(t, http.StatusCreated, &ses)
	if ses.ID != s.ID {
		t.Errorf("imported %q, want %q", ses.ID, s.ID)
	}

	src.do("GET", "/v1/sessions/nope/export", nil).wantProblem(t, http.StatusNotFound, "not_found")
	empty := mustCreateSession(t, src, nil)
	if n := len(splitLines(t, mustExport(t, src, empty.ID))); n != 2 {
		t.Errorf("an empty session exports %d lines, want the session and the end", n)
	}
}

// An export is one snapshot: appends that land while it streams are either all in
// it or not at all, so its session line always agrees with its messages.
func TestExportIsASnapshot(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	batch := make([]map[string]any, 400)
	for i := range batch {
		batch[i] = userMsg(fmt.Sprintf("message %d", i))
	}
	body := map[string]any{"messages": batch}
	c.do("POST", "/v1/sessions/"+s.ID+"/messages", body).want(t, http.StatusCreated, nil)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			if _, err := c.store.AppendMessages(t.Context(), model.DefaultTenant, s.ID, model.AppendRequest{
				Messages: []model.NewMessage{{Role: model.RoleUser, Content: model.TextContent("during the export"), Tokens: 1}}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 5 {
		var buf bytes.Buffer
		if err := c.store.ExportSession(t.Context(), model.DefaultTenant, s.ID, &buf); err != nil {
			t.Fatal(err)
		}
		lines := splitLines(t, buf.Bytes())
		var first model.ExportLine
		if err := json.Unmarshal(lines[0], &first); err != nil {
			t.Fatal(err)
		}
		if got := int64(len(lines) - 2); got != first.Session.LastSeq || got != first.Session.MessageCount {
			t.Fatalf("export holds %d messages, its session line says last_seq %d, message_count %d",
				got, first.Session.LastSeq, first.Session.MessageCount)
		}
		mustImport(t, c, buf.Bytes(), "?as_new=true")
	}
	<-done
}
