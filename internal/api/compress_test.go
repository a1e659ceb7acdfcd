package api

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jsonOf is a JSON body of exactly n bytes.
func jsonOf(n int) []byte {
	b := []byte(`{"data":"`)
	for i := 0; len(b) < n-2; i++ {
		b = append(b, "all work and no play "[i%21])
	}
	return append(b, `"}`...)
}

// rawGet asks srv for path with these headers and no transparent decoding, so
// that the test sees the encoding on the wire.
func rawGet(t *testing.T, srv *httptest.Server, method string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func TestGzipMiddleware(t *testing.T) {
	type answer struct {
		status      int
		contentType string
		declared    bool   // the handler sets Content-Length
		encoding    string // the handler's own Content-Encoding
		body        []byte
	}
	big, small := jsonOf(4<<10), jsonOf(compressMinBytes-1)
	cases := []struct {
		name     string
		method   string
		accept   string
		answer   answer
		wantGzip bool
		wantVary bool
	}{
		{"large_json_gzipped", "GET", "gzip", answer{200, "application/json", false, "", big}, true, true},
		{"large_json_with_length_gzipped", "GET", "gzip, deflate, br", answer{200, "application/json", true, "", big}, true, true},
		{"at_threshold_gzipped", "GET", "gzip", answer{200, "application/json", false, "", jsonOf(compressMinBytes)}, true, true},
		{"below_threshold_plain", "GET", "gzip", answer{200, "application/json", false, "", small}, false, true},
		{"below_threshold_with_length_plain", "GET", "gzip", answer{200, "application/json", true, "", small}, false, true},
		{"problem_gzipped", "GET", "gzip", answer{422, "application/problem+json", false, "", big}, true, true},
		{"ndjson_gzipped", "GET", "gzip", answer{200, "application/x-ndjson", false, "", big}, true, true},
		{"not_accepted_plain", "GET", "", answer{200, "application/json", false, "", big}, false, true},
		{"identity_only_plain", "GET", "identity", answer{200, "application/json", false, "", big}, false, true},
		{"gzip_refused_plain", "GET", "gzip;q=0, *;q=1", answer{200, "application/json", false, "", big}, false, true},
		{"star_accepted", "GET", "*", answer{200, "application/json", false, "", big}, true, true},
		{"x_gzip_with_q", "GET", "br;q=1, x-gzip;q=0.5", answer{200, "application/json", false, "", big}, true, true},
		{"head_plain", "HEAD", "gzip", answer{200, "application/json", true, "", big}, false, true},
		{"event_stream_never", "GET", "gzip", answer{200, "text/event-stream", false, "", big}, false, false},
		{"file_type_plain", "GET", "gzip", answer{200, "image/png", true, "", big}, false, false},
		{"already_encoded_plain", "GET", "gzip", answer{200, "application/json", false, "br", big}, false, false},
		{"not_modified_bodiless", "GET", "gzip", answer{304, "", false, "", nil}, false, true},
		{"no_content_bodiless", "GET", "gzip", answer{204, "application/json", false, "", nil}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.answer
			srv := httptest.NewServer(compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h := w.Header()
				if a.contentType != "" {
					h.Set("Content-Type", a.contentType)
				}
				if a.declared {
					h.Set("Content-Length", strconv.Itoa(len(a.body)))
				}
				if a.encoding != "" {
					h.Set("Content-Encoding", a.encoding)
				}
				w.WriteHeader(a.status)
				// in two writes, so that the first alone is under the threshold
				half := len(a.body) / 2
				_, _ = w.Write(a.body[:half])
				_, _ = w.Write(a.body[half:])
			})))
			defer srv.Close()
			res := rawGet(t, srv, tc.method, "Accept-Encoding", tc.accept)
			if res.StatusCode != a.status {
				t.Fatalf("status = %d, want %d", res.StatusCode, a.status)
			}
			gotGzip := res.Header.Get("Content-Encoding") == "gzip"
			if gotGzip != tc.wantGzip {
				t.Fatalf("Content-Encoding = %q, want gzip: %v", res.Header.Get("Content-Encoding"), tc.wantGzip)
			}
			if gotVary := strings.Contains(strings.Join(res.Header.Values("Vary"), ","), "Accept-Encoding"); gotVary != tc.wantVary {
				t.Errorf("Vary = %q, want Accept-Encoding in it: %v", res.Header.Values("Vary"), tc.wantVary)
			}
			wire, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			// net/http counts a short answer itself; a length the handler
			// declared for the uncompressed body must not survive.
			if cl := res.Header.Get("Content-Length"); cl != "" && tc.method != "HEAD" && cl != strconv.Itoa(len(wire)) {
				t.Errorf("Content-Length = %s, but %d bytes came", cl, len(wire))
			}
			got := wire
			if gotGzip {
				zr, err := gzip.NewReader(bytes.NewReader(wire))
				if err != nil {
					t.Fatal(err)
				}
				if got, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if len(wire) >= len(got) {
					t.Errorf("gzipped %d bytes into %d", len(got), len(wire))
				}
			}
			want := a.body
			if tc.method == "HEAD" {
				want = nil
				if got, want := res.Header.Get("Content-Length"), strconv.Itoa(len(a.body)); got != want {
					t.Errorf("HEAD: Content-Length = %q, want %q", got, want)
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("body is %d bytes, not the %d the handler wrote", len(got), len(want))
			}
		})
	}
}

// TestGzipStreamsFlush shows that neither an event stream nor a compressed
// NDJSON stream is held back: each line reaches the client when the handler
// flushes it, while the handler is still waiting to write the next.
func TestGzipStreamsFlush(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		wantGzip    bool
	}{
		{"text/event-stream", false},
		{"application/x-ndjson", true},
	} {
		t.Run(strings.ReplaceAll(tc.contentType, "/", "_"), func(t *testing.T) {
			next := make(chan struct{})
			srv := httptest.NewServer(compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush() // the stream is open before any event
				for i := range 3 {
					_, _ = io.WriteString(w, "data: event "+strconv.Itoa(i)+"\n")
					if err := http.NewResponseController(w).Flush(); err != nil {
						t.Errorf("flush: %v", err)
					}
					select {
					case <-next:
					case <-r.Context().Done():
						return
					}
				}
			})))
			defer srv.Close()
			defer close(next) // before Close waits for the handler
			res := rawGet(t, srv, "GET", "Accept-Encoding", "gzip")
			if got := res.Header.Get("Content-Encoding") == "gzip"; got != tc.wantGzip {
				t.Fatalf("Content-Encoding = %q, want gzip: %v", res.Header.Get("Content-Encoding"), tc.wantGzip)
			}
			var body io.Reader = res.Body
			if tc.wantGzip {
				zr, err := gzip.NewReader(res.Body)
				if err != nil {
					t.Fatal(err)
				}
				body = zr
			}
			lines := make(chan string)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(body)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			for i := range 3 {
				select {
				case line := <-lines:
					if want := "data: event " + strconv.Itoa(i); line != want {
						t.Fatalf("line %d = %q, want %q", i, line, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("event %d was not delivered when flushed", i)
				}
				next <- struct{}{}
			}
		})
	}
}

// TestGzipAbortIsNotAWholeBody: an export cut midway panics with
// http.ErrAbortHandler; its gzip stream must not be closed as if complete.
func TestGzipAbortIsNotAWholeBody(t *testing.T) {
	srv := httptest.NewServer(compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write(jsonOf(8 << 10))
		w.(http.Flusher).Flush() // the status and some of the body are out
		panic(http.ErrAbortHandler)
	})))
	defer srv.Close()
	res := rawGet(t, srv, "GET", "Accept-Encoding", "gzip")
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		return // cut before even the gzip header: not a whole body either
	}
	if _, err := io.ReadAll(zr); err == nil {
		t.Fatal("an aborted answer read as a whole gzip body")
	}
}

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		header []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"deflate, gzip;q=1.0, *;q=0.5"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip ; q=0.000"}, false},
		{[]string{"gzip;q=0.001"}, true},
		{[]string{"gzip;q=2"}, false},
		{[]string{"gzip;q=NaN"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"*, gzip;q=0"}, false},
		{[]string{"br", "gzip"}, true},
		{[]string{"identity"}, false},
		{[]string{"gzipx"}, false},
	} {
		if got := acceptsGzip(tc.header); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}
