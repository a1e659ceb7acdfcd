package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// escapeAll writes s as a JSON string body with every character \u-escaped:
// the longest form an encoder may give it.
func escapeAll(s string) string {
	var b strings.Builder
	b.Grow(6 * len(s))
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// largestMessage is a user message whose record (model.NewMessage.RecordSize)
// is exactly model.MaxRecordJSON plus over: text parts of ASCII that fill
// model.MaxContentBytes (each written as text gives it) and a provider_item
// that fills the rest.
func largestMessage(t testing.TB, over int, text func(string) string) string {
	t.Helper()
	part := `{"type":"text","text":"` + text(strings.Repeat("a", model.MaxContentBytes/4-8)) + `"}`
	body := func(pad int) string {
		return `{"role":"user","content":[` + strings.Repeat(part+",", 3) + part +
			`],"provider_item":{"blob":"` + strings.Repeat("b", pad) + `"}}`
	}
	size := func(pad int) int {
		var m model.NewMessage
		if err := model.DecodeJSON([]byte(body(pad)), &m); err != nil {
			t.Fatalf("decode the message: %v", err)
		}
		return m.RecordSize()
	}
	pad := model.MaxRecordJSON - size(0) + over
	if got := size(pad); got != model.MaxRecordJSON+over {
		t.Fatalf("the message's record is %d bytes, want %d", got, model.MaxRecordJSON+over)
	}
	return body(pad)
}

// Every request that carries one legal object fits at the server's defaults,
// however its JSON escapes the object's text: the largest message, a 4 MiB
// checkpoint state, and the cases that were refused with 413 (an OpenAI
// Agents SDK run with an 800 KB image, a LangGraph state of 1.5 MiB). One byte
// past an object's bound is 422 naming the field.
func TestLegalObjectsFitAtDefaults(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"id": "big"})
	msgs := "/v1/sessions/big/messages"

	image := "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 800_000/11)
	mustAppend(t, c, s.ID, `{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image","url":"`+image+`"}]}`)

	state := func(n int, text func(string) string) string {
		return `{"iteration":ITER,"state":{"blob":"` + text(strings.Repeat("x", n)) + `"}}`
	}
	iteration := 0
	put := func(body string) *response {
		iteration++
		return c.do("PUT", "/v1/sessions/big/checkpoint", strings.Replace(body, "ITER", fmt.Sprint(iteration), 1))
	}
	plain := func(s string) string { return s }
	put(state(3<<19, plain)).want(t, http.StatusCreated, nil) // 1.5 MiB
	// {"blob":"…"} is the state's canonical JSON: 11 bytes around the text.
	put(state(model.MaxStateBytes-11, plain)).want(t, http.StatusCreated, nil)
	p := put(state(model.MaxStateBytes-10, plain)).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "state" {
		t.Errorf("one byte past the state's bound: errors %+v, want one naming state", p.Errors)
	}

	if testing.Short() || raceDetector {
		t.Log("the largest message and the escaped bodies (~30 MB) run in make test's plain pass, not under -race or -short")
		return
	}
	put(state(model.MaxStateBytes-11, escapeAll)).want(t, http.StatusCreated, nil) // 24 MiB as sent
	c.do("POST", msgs, largestMessage(t, 0, plain)).want(t, http.StatusCreated, nil)
	c.do("POST", msgs, largestMessage(t, 0, escapeAll)).want(t, http.StatusCreated, nil) // ~28 MiB as sent
	c.do("POST", msgs, `{"messages":[`+largestMessage(t, 0, escapeAll)+`]}`).want(t, http.StatusCreated, nil)
	p = c.do("POST", msgs, largestMessage(t, 1, plain)).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "content" {
		t.Errorf("one byte past the message's bound: errors %+v, want one naming content", p.Errors)
	}
	if got := mustGetSession(t, c, "big"); got.LastSeq != 4 {
		t.Errorf("last_seq %d, want 4", got.LastSeq)
	}
}

// messageRouteLimit is a message route's body limit at the defaults: the
// largest message escaped, its embedding and an envelope, and a request's
// data: URLs (base64 of --max-file-bytes) escaped with their envelope.
const messageRouteLimit = 6*model.MaxRecordJSON + model.MaxEmbeddingDims*32 + 64<<10 +
	6*4*((model.DefaultMaxFileBytes+2)/3) + 64<<10

// A body past its route's limit is 413 naming the limit: at once from its
// Content-Length, before a byte of it is read, and when the body turns out
// longer than announced (chunked). A route that carries no large object
// keeps --max-body-bytes as its limit; the routes that carry one take the
// larger of the two.
func TestRouteLimits(t *testing.T) {
	c := newClient(t, withMaxBody(64<<10))
	mustCreateSession(t, c, map[string]any{"id": "s"})

	// Announced, never sent: answered without waiting for the body.
	for _, tc := range []struct {
		path   string
		length int64
	}{
		{"/v1/sessions", 64<<10 + 1},
		{"/v1/sessions/s/messages", messageRouteLimit + 1},
	} {
		status, body := announceOnly(t, c, "POST", tc.path, tc.length)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"code":"payload_too_large"`) ||
			!strings.Contains(body, fmt.Sprint(tc.length-1)) {
			t.Errorf("POST %s announcing %d bytes: %d %s, want 413 naming the limit %d", tc.path, tc.length, status, body, tc.length-1)
		}
	}

	// Sent: an ordinary route past --max-body-bytes, a message route past it
	// but within its own.
	c.do("POST", "/v1/sessions", `{"title":"`+strings.Repeat("t", 70<<10)+`"}`).
		wantProblem(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	mustAppend(t, c, "s", `{"role":"user","content":"`+strings.Repeat("m", 70<<10)+`"}`)
	c.do("PUT", "/v1/sessions/s/checkpoint", `{"iteration":1,"state":{"k":"`+strings.Repeat("c", 70<<10)+`"}}`).
		want(t, http.StatusCreated, nil)
}

// announceOnly sends a request's head with a Content-Length and none of the
// body, and reads the answer: a server that waited for the body would not
// answer before the read deadline.
func announceOnly(t *testing.T, c *client, method, path string, length int64) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, length)
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s announcing %d bytes: no answer without the body: %v", method, path, length, err)
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(res.Body).WriteTo(&b)
	return res.StatusCode, b.String()
}

// A stream's line may hold the largest message, as a single append may; a
// line past that is refused, naming the limit, and stops the stream.
func TestStreamLineLimit(t *testing.T) {
	c := newClient(t, withMaxBody(64<<10))
	mustCreateSession(t, c, map[string]any{"id": "s"})
	lines := streamLines(t, c, "s", strings.NewReader(`{"role":"user","content":"`+strings.Repeat("x", 1<<20)+`"}`+"\n"))
	if len(lines) != 1 || !strings.Contains(string(lines[0]), `"seq":1`) {
		t.Fatalf("a 1 MiB line with --max-body-bytes 64 KiB: %.200s", lines)
	}
	if testing.Short() || raceDetector {
		return
	}
	long := `{"role":"user","content":"` + strings.Repeat("x", messageRouteLimit) + `"}` + "\n"
	lines = streamLines(t, c, "s", strings.NewReader(long))
	if last := string(lines[len(lines)-1]); !strings.Contains(last, `"code":"payload_too_large"`) {
		t.Errorf("a line past the limit: %.300s, want payload_too_large", last)
	}
	if s := mustGetSession(t, c, "s"); s.LastSeq != 1 {
		t.Errorf("last_seq %d, want 1", s.LastSeq)
	}
}
