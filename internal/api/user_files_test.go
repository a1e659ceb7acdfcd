package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// userKeys makes, in tenant t1, a tenant-wide admin key and write keys bound
// to ann and to bob.
func userKeys(t *testing.T, root *client) (admin, ann, bob *client) {
	t.Helper()
	admin = root.as(mustKey(t, root, "t1", model.ScopeAdmin).Key)
	bound := func(user string) *client {
		var k model.NewAPIKey
		admin.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "name": user, "user_id": user}).want(t, http.StatusCreated, &k)
		return root.as(k.Key)
	}
	return admin, bound("ann"), bound("bob")
}

// imagePart is a user message whose one part names file.
func imagePart(file string) map[string]any {
	return map[string]any{"role": "user", "content": []map[string]any{{"type": "image", "file_id": file}}}
}

// A key bound to a user reads only the files that user uploaded or that its
// sessions' messages reference; every other file of the tenant is as missing
// as one never uploaded, to a download and to a part it appends (one
// message, a batch, a stream, a rewind's new tail). Keys bound to no user see
// every file of the tenant, as before.
func TestUserBoundFileVisibility(t *testing.T) {
	root := newClient(t)
	admin, ann, bob := userKeys(t, root)
	annFile := mustUpload(t, ann, "image/png", []byte("ann's picture"))
	mustCreateSession(t, ann, map[string]any{"id": "ann-s"})
	mustCreateSession(t, bob, map[string]any{"id": "bob-s"})

	bob.do("GET", "/v1/files/"+annFile.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	ann.do("GET", "/v1/files/"+annFile.ID, nil).want(t, http.StatusOK, nil)
	admin.do("GET", "/v1/files/"+annFile.ID, nil).want(t, http.StatusOK, nil)
	// Not even a validator tells the file exists.
	bob.do("GET", "/v1/files/"+annFile.ID, nil, "If-None-Match", `"`+annFile.SHA256+`"`).
		wantProblem(t, http.StatusNotFound, "not_found")

	// Naming ann's file in bob's own session, and then downloading it, is the
	// hole: every way a bound key appends is refused.
	field := func(p problem) string {
		if len(p.Errors) == 0 {
			return ""
		}
		return p.Errors[0].Field
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"append", "POST", "/v1/sessions/bob-s/messages", imagePart(annFile.ID), "content[0].file_id"},
		{"batch", "POST", "/v1/sessions/bob-s/messages/batch",
			map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}, imagePart(annFile.ID)}},
			"messages[1].content[0].file_id"},
		{"batch_on_append_route", "POST", "/v1/sessions/bob-s/messages",
			map[string]any{"messages": []any{imagePart(annFile.ID)}}, "messages[0].content[0].file_id"},
		{"rewind_tail", "POST", "/v1/sessions/bob-s/rewind",
			map[string]any{"to_seq": 0, "messages": []any{imagePart(annFile.ID)}}, "messages[0].content[0].file_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := bob.do(tc.method, tc.path, tc.body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if got := field(p); got != tc.field {
				t.Errorf("field %q, want %q", got, tc.field)
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		line, _ := json.Marshal(imagePart(annFile.ID))
		res := bob.do("POST", "/v1/sessions/bob-s/messages", string(line)+"\n", "Content-Type", "application/x-ndjson").
			want(t, http.StatusOK, nil)
		var p problem
		if err := json.Unmarshal(bytes.TrimSpace(res.Body), &p); err != nil || p.Code != "validation_failed" ||
			field(p) != "content[0].file_id" {
			t.Errorf("stream answered %s", res.Body)
		}
	})
	if s := mustGetSession(t, bob, "bob-s"); s.MessageCount != 0 {
		t.Fatalf("refused appends stored %d messages", s.MessageCount)
	}

	// A key bound to no user may give bob the file: a message of bob's
	// session references it, so bob may read it, and name it again.
	mustAppend(t, admin, "bob-s", imagePart(annFile.ID))
	bob.do("GET", "/v1/files/"+annFile.ID, nil).want(t, http.StatusOK, nil)
	mustAppend(t, bob, "bob-s", imagePart(annFile.ID))
	mustAppend(t, ann, "ann-s", imagePart(annFile.ID))

	// A rewind's new tail may name the files the tail it cuts named.
	mustRewind(t, ann, "ann-s", map[string]any{"to_seq": 0, "messages": []any{imagePart(annFile.ID)}})
	ann.do("GET", "/v1/files/"+annFile.ID, nil).want(t, http.StatusOK, nil)
}

// An upload tells a bound key only about its own uploads: 201 the first time
// that user uploads the bytes, whoever else holds them, with that first
// upload's time; 200 when the same user uploaded them before. Keys bound to
// no user get 200 for any file of the tenant, as before.
func TestUserBoundUploadAnswers(t *testing.T) {
	root := newClient(t)
	admin, ann, bob := userKeys(t, root)
	data := []byte("the same bytes, twice over")
	first := mustUpload(t, ann, "text/plain", data)
	time.Sleep(5 * time.Millisecond) // so that bob's first upload has a time of its own
	var bobs model.File
	bob.do("POST", "/v1/files", data, "Content-Type", "text/plain").want(t, http.StatusCreated, &bobs)
	if bobs.ID != first.ID || bobs.SHA256 != first.SHA256 || bobs.CreatedAt <= first.CreatedAt {
		t.Errorf("bob's first upload %+v, ann's %+v: same id, bob's own time", bobs, first)
	}
	var again model.File
	bob.do("POST", "/v1/files", data, "Content-Type", "text/plain").want(t, http.StatusOK, &again)
	if again != bobs {
		t.Errorf("bob's second upload %+v, first %+v", again, bobs)
	}
	ann.do("POST", "/v1/files", data, "Content-Type", "text/plain").want(t, http.StatusOK, &again)
	if again != first {
		t.Errorf("ann's second upload %+v, first %+v", again, first)
	}
	admin.do("POST", "/v1/files", data, "Content-Type", "text/plain").want(t, http.StatusOK, nil)
	mustUpload(t, admin, "text/plain", []byte("the tenant's own"))
	ann.do("POST", "/v1/files", []byte("the tenant's own"), "Content-Type", "text/plain").want(t, http.StatusCreated, nil)
}

// A file lives while a message references it or a user holds an upload of
// it; a user's upload is used up when that user's last reference goes. So a
// file one user uploaded and never used stays, whatever another user does
// with the same bytes, and what one user sees never depends on another's
// purges.
func TestUserBoundFileLifetime(t *testing.T) {
	root := newClient(t)
	admin, ann, bob := userKeys(t, root)
	data := []byte("uploaded by both")
	f := mustUpload(t, ann, "image/png", data) // ann never references it
	bob.do("POST", "/v1/files", data, "Content-Type", "image/png").want(t, http.StatusCreated, nil)
	mustCreateSession(t, bob, map[string]any{"id": "bob-s"})
	mustAppend(t, bob, "bob-s", imagePart(f.ID))
	admin.do("DELETE", "/v1/sessions/bob-s?purge=true", nil).want(t, http.StatusNoContent, nil)

	ann.do("GET", "/v1/files/"+f.ID, nil).want(t, http.StatusOK, nil)
	bob.do("GET", "/v1/files/"+f.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	bob.do("POST", "/v1/files", data, "Content-Type", "image/png").want(t, http.StatusCreated, nil)

	// Uploaded, used, released: gone, for its uploader and for the tenant.
	own := mustUpload(t, ann, "image/png", []byte("ann's alone"))
	mustCreateSession(t, ann, map[string]any{"id": "ann-s"})
	mustAppend(t, ann, "ann-s", imagePart(own.ID))
	mustRewind(t, ann, "ann-s", map[string]any{"to_seq": 0})
	ann.do("GET", "/v1/files/"+own.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	admin.do("GET", "/v1/files/"+own.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	ann.do("POST", "/v1/files", []byte("ann's alone"), "Content-Type", "image/png").want(t, http.StatusCreated, nil)
}

// A session's export carries its files; imported back (by a key bound to no
// user) for the same user, the user reads them through the session again.
func TestUserBoundFilesExportImport(t *testing.T) {
	root := newClient(t)
	admin, ann, _ := userKeys(t, root)
	given := mustUpload(t, admin, "image/png", []byte("given to ann by the tenant"))
	mustCreateSession(t, ann, map[string]any{"id": "ann-s"})
	mustAppend(t, admin, "ann-s", imagePart(given.ID))
	export := mustExport(t, admin, "ann-s")
	if !strings.Contains(string(export), given.ID) {
		t.Fatalf("export has no file line for %s", given.ID)
	}
	admin.do("DELETE", "/v1/sessions/ann-s?purge=true", nil).want(t, http.StatusNoContent, nil)
	admin.do("GET", "/v1/files/"+given.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	mustImport(t, admin, export, "")
	ann.do("GET", "/v1/files/"+given.ID, nil).want(t, http.StatusOK, nil)
	mustAppend(t, ann, "ann-s", imagePart(given.ID))
}
