package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// An upload stores the bytes as they came, once: the same bytes and type are
// the same file; a download gives them back with headers that keep them inert.
func TestFileUploadAndDownload(t *testing.T) {
	c := newClient(t)
	data := bytes.Repeat([]byte("\x00\x01binary\xff"), 100_000) // ~1 MiB: several chunks
	f := mustUpload(t, c, "application/pdf", data)
	sum := sha256.Sum256(data)
	if f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != int64(len(data)) || f.MediaType != "application/pdf" ||
		!model.ValidFileID(f.ID) {
		t.Fatalf("file %+v", f)
	}
	var again model.File
	r := c.do("POST", "/v1/files", data, "Content-Type", "application/pdf").want(t, http.StatusOK, &again)
	if again != f || r.Header.Get("Location") != "/v1/files/"+f.ID {
		t.Errorf("second upload %+v (Location %s), want %+v", again, r.Header.Get("Location"), f)
	}
	// The same bytes as another type are another file, bytes stored once.
	other := mustUpload(t, c, "application/octet-stream", data)
	if other.ID == f.ID || other.SHA256 != f.SHA256 {
		t.Errorf("as octet-stream: %+v", other)
	}

	got := c.do("GET", "/v1/files/"+f.ID, nil).want(t, http.StatusOK, nil)
	if !bytes.Equal(got.Body, data) {
		t.Fatalf("downloaded %d bytes, uploaded %d", len(got.Body), len(data))
	}
	for h, want := range map[string]string{"Content-Type": "application/pdf", "ETag": `"` + f.SHA256 + `"`,
		"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "default-src 'none'; sandbox"} {
		if got.Header.Get(h) != want {
			t.Errorf("%s: %q, want %q", h, got.Header.Get(h), want)
		}
	}
	c.do("GET", "/v1/files/"+f.ID, nil, "If-None-Match", `"`+f.SHA256+`"`).want(t, http.StatusNotModified, nil)
	c.do("GET", "/v1/files/file_00000000000000000000000000000000", nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("GET", "/v1/files/..", nil).wantProblem(t, http.StatusNotFound, "not_found")

	empty := mustUpload(t, c, "text/plain; charset=utf-8", nil)
	if g := c.do("GET", "/v1/files/"+empty.ID, nil).want(t, http.StatusOK, nil); len(g.Body) != 0 || empty.Size != 0 {
		t.Errorf("empty file: %d bytes, size %d", len(g.Body), empty.Size)
	}
}

func TestFileUploadRules(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/v1/files", "x", "Content-Type", "").wantProblem(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	c.do("POST", "/v1/files", "x", "Content-Type", "nonsense").wantProblem(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	c.do("POST", "/v1/files", "x", "Content-Type", "multipart/form-data; boundary=x").
		wantProblem(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	small := newClient(t, withMaxFile(1024))
	small.do("POST", "/v1/files", strings.Repeat("x", 1025), "Content-Type", "text/plain").
		wantProblem(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	mustUpload(t, small, "text/plain", []byte(strings.Repeat("x", 1024)))
}

// A file goes when a purge takes the last message that references it, not
// before: not while another session, or a fork's copy, still does.
func TestFilesGoWithTheirLastReference(t *testing.T) {
	c := newClient(t)
	f := mustUpload(t, c, "image/png", []byte("shared picture"))
	kept := mustUpload(t, c, "image/png", []byte("never referenced"))
	part := map[string]any{"role": "user", "content": []map[string]any{{"type": "image", "file_id": f.ID}}}
	for _, id := range []string{"one", "two"} {
		mustCreateSession(t, c, map[string]any{"id": id})
		mustAppend(t, c, id, part)
	}
	var fork model.Session
	c.do("POST", "/v1/sessions/one/fork", map[string]any{"id": "one-fork"}).want(t, http.StatusCreated, &fork)

	c.do("DELETE", "/v1/sessions/one?purge=true", nil).want(t, http.StatusNoContent, nil)
	c.do("GET", "/v1/files/"+f.ID, nil).want(t, http.StatusOK, nil) // two and the fork still reference it
	c.do("DELETE", "/v1/sessions/two?purge=true", nil).want(t, http.StatusNoContent, nil)
	c.do("GET", "/v1/files/"+f.ID, nil).want(t, http.StatusOK, nil) // the fork's copy does
	c.do("DELETE", "/v1/sessions/one-fork?purge=true", nil).want(t, http.StatusNoContent, nil)
	c.do("GET", "/v1/files/"+f.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("GET", "/v1/files/"+kept.ID, nil).want(t, http.StatusOK, nil)
}
