package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// shownWriter deletes the suffix however the body is cut into writes: every
// way of cutting a body into three writes gives what one pass over the whole
// body gives, and a declared Content-Length is corrected.
func TestShownWriterDeletesAcrossWrites(t *testing.T) {
	suffix := []byte("!0123456789abcdef")
	for _, body := range []string{
		`{"id":"x!0123456789abcdef","parent_id":"y!0123456789abcdef"}`,
		`!0123456789abcdef!0123456789abcdef`,
		`!!0123456789abcdef!012345`, // a suffix's start that is not one, at the end
		`no suffix at all, but a ! and !0123`,
	} {
		want, _ := deleteSuffixes([]byte(body), suffix, true)
		want = bytes.Clone(want)
		for i := 0; i <= len(body); i++ {
			for j := i; j <= len(body); j++ {
				rec := httptest.NewRecorder()
				sw := &shownWriter{ResponseWriter: rec, suffix: suffix}
				for _, part := range []string{body[:i], body[i:j], body[j:]} {
					if _, err := sw.Write([]byte(part)); err != nil {
						t.Fatal(err)
					}
				}
				sw.finish()
				if got := rec.Body.String(); got != string(want) {
					t.Fatalf("%q cut at %d and %d: %q, want %q", body, i, j, got, want)
				}
			}
		}
		rec := httptest.NewRecorder()
		sw := &shownWriter{ResponseWriter: rec, suffix: suffix}
		sw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		sw.Header().Set("Location", "/v1/sessions/x!0123456789abcdef")
		sw.WriteHeader(http.StatusCreated)
		_, _ = sw.Write([]byte(body))
		sw.finish()
		if rec.Code != http.StatusCreated || rec.Header().Get("Content-Length") != strconv.Itoa(len(want)) ||
			rec.Header().Get("Location") != "/v1/sessions/x" || rec.Body.String() != string(want) {
			t.Errorf("whole body %q: %d, Content-Length %s, Location %s, %q", body, rec.Code,
				rec.Header().Get("Content-Length"), rec.Header().Get("Location"), rec.Body.String())
		}
	}
}
