package api_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"
)

// A request whose Content-Length is past its route's limit is refused from
// the header alone: the 413 comes while the client has sent no byte of the
// body, and the connection closes, so the server neither waits for the body
// nor drains it. Checked with a raw client that sends headers only, for a
// length just past the limit (which net/http would otherwise drain) and for
// one far past it, on every route that takes a body of its own limit.
func TestDeclaredLengthPastTheLimit(t *testing.T) {
	const limit = 4096
	c := newClient(t, withMaxBody(limit), withMaxFile(limit), withImportMax(limit))
	mustCreateSession(t, c, map[string]any{"id": "s"})
	u, err := url.Parse(c.base)
	if err != nil {
		t.Fatal(err)
	}
	// A message's routes admit the largest legal message whatever
	// --max-body-bytes says (bodylimits.go, ~48 MiB): just past theirs is
	// just past 64 MiB.
	const messageRoute = 64 << 20
	for _, tc := range []struct {
		name, path, contentType string
		limit                   int64
	}{
		{"json", "/v1/sessions", "application/json", limit},
		{"append", "/v1/sessions/s/messages", "application/json", messageRoute},
		{"batch", "/v1/sessions/s/messages/batch", "application/json", messageRoute},
		{"stream", "/v1/sessions/s/messages", "application/x-ndjson", limit},
		{"file", "/v1/files", "image/png", limit},
		{"import", "/v1/sessions/import", "application/x-ndjson", limit},
		{"agent_import", "/v1/agents/import", "application/x-ndjson", limit},
	} {
		for _, length := range []int64{tc.limit + 1, 1 << 40} {
			t.Run(tc.name+"_"+strconv.FormatInt(length, 10), func(t *testing.T) {
				conn, err := net.Dial("tcp", u.Host)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
					tc.path, u.Host, tc.contentType, length); err != nil {
					t.Fatal(err)
				}
				// A deadline, not a measure of speed: without the check the
				// server waits for a body that never comes.
				_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				req, _ := http.NewRequest("POST", c.base+tc.path, nil)
				req.Header.Set("Content-Type", tc.contentType)
				br := bufio.NewReader(conn)
				res, err := http.ReadResponse(br, req)
				if err != nil {
					t.Fatalf("no answer before any byte of the body: %v", err)
				}
				body, err := io.ReadAll(res.Body)
				if err != nil {
					t.Fatalf("read the answer: %v", err)
				}
				checkResponse(t, req, &response{Status: res.StatusCode, Header: res.Header, Body: body})
				var p problem
				if res.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(body, &p) != nil || p.Code != "payload_too_large" {
					t.Fatalf("answer %d %s, want 413 payload_too_large", res.StatusCode, body)
				}
				if !res.Close { // ReadResponse takes "Connection: close" out of the header into Close
					t.Errorf("the answer does not say Connection: close")
				}
				if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatalf("the connection stays open, waiting for the body")
					}
					t.Fatalf("after the answer: %v, want the connection closed", err)
				}
			})
		}
	}
}
