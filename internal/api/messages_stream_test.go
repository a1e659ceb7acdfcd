package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// streamLines posts an NDJSON body of messages and returns the answer's lines,
// each checked against openapi.yaml as a Message or a Problem.
func streamLines(t *testing.T, c *client, session string, body io.Reader) []json.RawMessage {
	t.Helper()
	req, _ := http.NewRequest("POST", c.base+"/v1/sessions/"+session+"/messages", body)
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	all, _ := io.ReadAll(res.Body)
	checkResponse(t, req, &response{Status: res.StatusCode, Header: res.Header, Body: all})
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d, %s: %s", res.StatusCode, res.Header.Get("Content-Type"), all)
	}
	doc, _ := loadSpec(t)
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(all))
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := json.RawMessage(append([]byte(nil), sc.Bytes()...))
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("answer line is not JSON: %s", line)
		}
		schema := "Message"
		if bytes.Contains(line, []byte(`"urn:logbook:problem:`)) {
			schema = "Problem"
		}
		if err := doc.Components.Schemas[schema].Value.VisitJSON(v); err != nil {
			t.Errorf("answer line is no %s: %v\n%s", schema, err, line)
		}
		out = append(out, line)
	}
	return out
}

// A stream of messages is appended in the order of its lines, each answered as
// it commits; the seqs follow the lines, also with many lines in flight.
func TestStreamAppendsInOrder(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	var body strings.Builder
	const n = 500
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&body, `{"role":"user","content":"line %d","tokens":1,"idempotency_key":"k%d"}`+"\n", i, i)
		if i%100 == 0 {
			body.WriteString("\n") // blank lines are allowed
		}
	}
	lines := streamLines(t, c, "s", strings.NewReader(body.String()))
	if len(lines) != n {
		t.Fatalf("%d answer lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		var m model.Message
		if err := json.Unmarshal(l, &m); err != nil || m.Seq != int64(i+1) || m.Content.Text != fmt.Sprintf("line %d", i+1) {
			t.Fatalf("answer %d: %s", i, l)
		}
	}
	if s := mustGetSession(t, c, "s"); s.LastSeq != n || s.TotalTokens != n {
		t.Errorf("session after the stream: %+v", s)
	}
	// The same stream again: every line is a replay of its idempotency_key.
	lines = streamLines(t, c, "s", strings.NewReader(body.String()))
	if len(lines) != n || mustGetSession(t, c, "s").LastSeq != n {
		t.Fatalf("resending the stream appended again")
	}
}

// Once a line fails, every later line is refused and the answer ends with the
// failed line's problem: the history gets no hole, only a tail to resend.
func TestStreamStopsAtTheFirstFailure(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	body := `{"role":"user","content":"one"}
{"role":"user","content":"two"}
{"role":"robot","content":"three"}
{"role":"user","content":"four"}
`
	lines := streamLines(t, c, "s", strings.NewReader(body))
	if len(lines) != 3 {
		t.Fatalf("%d answer lines, want 3: %s", len(lines), lines)
	}
	var p struct {
		Code   string             `json:"code"`
		Line   int                `json:"line"`
		Errors []model.FieldError `json:"errors"`
	}
	if err := json.Unmarshal(lines[2], &p); err != nil || p.Code != "validation_failed" || p.Line != 3 || p.Errors[0].Field != "role" {
		t.Fatalf("third answer: %s", lines[2])
	}
	if s := mustGetSession(t, c, "s"); s.LastSeq != 2 {
		t.Errorf("last_seq %d, want 2: nothing after the failed line", s.LastSeq)
	}
	// A malformed line, a message too long, and a closed session stop a stream
	// too (a line past the line limit: TestStreamLineLimit).
	for _, tc := range []struct{ name, body, code string }{
		{"malformed", "{\"role\":\"user\"}\n{not json\n", "malformed_json"},
		{"too_long", `{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}` + "\n", "validation_failed"},
	} {
		lines := streamLines(t, c, "s", strings.NewReader(tc.body))
		if !bytes.Contains(lines[len(lines)-1], []byte(`"code":"`+tc.code+`"`)) {
			t.Errorf("%s: last answer %s, want %s", tc.name, lines[len(lines)-1], tc.code)
		}
	}
	c.do("DELETE", "/v1/sessions/s", nil).want(t, http.StatusOK, nil)
	lines = streamLines(t, c, "s", strings.NewReader(`{"role":"user","content":"late"}`+"\n"))
	if len(lines) != 1 || !bytes.Contains(lines[0], []byte(`"code":"session_closed"`)) {
		t.Errorf("stream to a closed session: %s", lines)
	}
	c.do("POST", "/v1/sessions/s/messages", `{"role":"user"}`+"\n", "Content-Type", "application/x-ndjson", "Idempotency-Key", strings.Repeat("k", 256)).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	// No such session: a 404 status, not a 200 whose lines all fail.
	c.do("POST", "/v1/sessions/nope/messages", `{"role":"user","content":"x"}`+"\n", "Content-Type", "application/x-ndjson").
		wantProblem(t, http.StatusNotFound, "not_found")
}
