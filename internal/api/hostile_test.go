package api_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// "." and ".." are dot-segments in a URL path: a client or proxy that normalises
// URLs would send /v1/sessions/../messages somewhere else. No id may be one.
func TestDotSegmentIDsRefused(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "parent"})
	for _, id := range []string{".", ".."} {
		for _, r := range []struct{ path, field string }{
			{"/v1/sessions", "id"},
			{"/v1/agents", "id"},
			{"/v1/sessions/parent/fork", "id"},
		} {
			body := map[string]any{"id": id, "name": "n"}
			if r.path != "/v1/agents" {
				delete(body, "name")
			}
			p := c.do("POST", r.path, body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) != 1 || p.Errors[0].Field != r.field {
				t.Errorf("POST %s id %q: errors %+v", r.path, id, p.Errors)
			}
		}
	}
	// Dots inside an id are fine.
	mustCreateSession(t, c, map[string]any{"id": "..a.b."})
}

// A query parameter given twice is refused rather than silently taking the
// first value; list parameters may repeat.
func TestRepeatedQueryParameters(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "A"})
	for _, path := range []string{
		"/v1/sessions?status=active&status=completed",
		"/v1/sessions?limit=1&limit=200",
		"/v1/sessions/s/messages?after_seq=1&after_seq=2",
		"/v1/sessions?metadata.k=1&metadata.k=2",
	} {
		p := c.do("GET", path, nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
		u, _ := url.Parse(path)
		for name := range u.Query() {
			if len(p.Errors) != 1 || p.Errors[0].Field != name || !strings.Contains(p.Errors[0].Message, "2 times") {
				t.Errorf("GET %s: errors %+v", path, p.Errors)
			}
		}
	}
	c.do("GET", "/v1/agents/a/archival/search?q=x&tags=a&tags=b", nil).want(t, http.StatusOK, nil)
	c.do("GET", "/v1/agents/a/messages/search?q=x&role=user&role=tool", nil).want(t, http.StatusOK, nil)
}

// A request with both Content-Length and Transfer-Encoding is answered, then its
// connection is closed (RFC 9112 §6.1): the two framings may disagree for a proxy.
func TestContentLengthWithTransferEncodingClosesTheConnection(t *testing.T) {
	c := newClient(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"id":"smuggled"}`
	req := "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
		"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n" +
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || !res.Close {
		t.Fatalf("status %d, Connection %q: want 201 and the connection closed", res.StatusCode, res.Header.Get("Connection"))
	}
	// The pipelined second request is never answered on this connection.
	if res2, err := http.ReadResponse(br, nil); err == nil {
		t.Fatalf("a second answer came on the same connection: %d", res2.StatusCode)
	}
}

// An import body that dribbles (one byte at a time, far below any real upload's
// rate) is cut once its grace period is over, instead of holding a connection
// and a request goroutine for as long as the client likes.
func TestTrickledImportIsCut(t *testing.T) {
	c := newClient(t, withStreamGrace(time.Second))
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	go func() {
		defer pw.Close()
		for _, b := range []byte(`{"type":"session","session":{"id":"slow","title":"`) {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := pw.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	defer close(stop)
	start := time.Now()
	req, _ := http.NewRequest("POST", c.base+"/v1/sessions/import", pr)
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := c.http.Do(req)
	if err == nil {
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode < 400 {
			t.Fatalf("a dribbled import answered %d", res.StatusCode)
		}
	}
	// The trickle would take 10 s; the server lets go after its 1 s grace.
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("the server held the dribbling import for %v", d)
	}
	c.do("GET", "/v1/sessions/slow", nil).wantProblem(t, http.StatusNotFound, "not_found")
}

// A block's history is bounded in versions and in bytes: every version is
// stored whole, so N small appends to a large block must not keep N copies.
func TestBlockHistoryIsBounded(t *testing.T) {
	if raceDetector {
		t.Skip("moves ~30 MB of block versions: run by make test's plain pass, not under -race")
	}
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "A"})
	c.do("PUT", "/v1/agents/a/blocks/big", map[string]any{"value": strings.Repeat("x", 900_000), "limit": model.MaxBlockLimit}).
		want(t, http.StatusCreated, nil)
	for i := 0; i < 30; i++ {
		c.do("POST", "/v1/agents/a/blocks/big/append", map[string]any{"content": "y"}).want(t, http.StatusOK, nil)
	}
	hist := listAll[model.Block](t, c, "/v1/agents/a/blocks/big/history", 200)
	total := 0
	for _, b := range hist {
		total += len(b.Value)
	}
	if len(hist) == 0 || hist[0].Version != 31 || total > 9<<20 || len(hist) > 10 {
		t.Errorf("history of a 900 KB block after 30 appends: %d versions (newest %d), %d bytes", len(hist), hist[0].Version, total)
	}
	c.do("PUT", "/v1/agents/a/blocks/small", map[string]any{"value": "v"}).want(t, http.StatusCreated, nil)
	for i := 0; i < 120; i++ {
		c.do("POST", "/v1/agents/a/blocks/small/append", map[string]any{"content": "y"}).want(t, http.StatusOK, nil)
	}
	if hist := listAll[model.Block](t, c, "/v1/agents/a/blocks/small/history", 200); len(hist) != 100 || hist[0].Version != 121 {
		t.Errorf("history of a small block after 121 versions: %d versions, newest %d", len(hist), hist[0].Version)
	}
}
