package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// createShape is what POST /v1/sessions answers, with what differs between
// any two creations (the id, the times, the request id) taken out: the rest
// must not depend on whether another user holds the id.
func createShape(t *testing.T, r *response, id string) string {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	if body["id"] != id || r.Header.Get("Location") != "/v1/sessions/"+id {
		t.Errorf("created %v at %q, want id %q", body["id"], r.Header.Get("Location"), id)
	}
	delete(body, "id")
	delete(body, "created_at")
	delete(body, "updated_at")
	var names []string
	for name := range r.Header {
		if name != "Date" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b, _ := json.Marshal(body)
	return http.StatusText(r.Status) + " " + strings.Join(names, ",") + " " + string(b)
}

// A key bound to a user has session ids of its own: creating X answers the
// same whether or not another user (or a session of no user) holds X, each
// user then reads its own X, and keys bound to no user see both, under the
// ids they are stored as.
func TestUserBoundSessionIDSpace(t *testing.T) {
	root := newClient(t)
	admin, ann, bob := userKeys(t, root)
	mustCreateSession(t, bob, map[string]any{"id": "taken", "title": "bob's"})
	mustCreateSession(t, admin, map[string]any{"id": "tenants", "title": "no user's"})
	mustAppend(t, bob, "taken", map[string]any{"role": "user", "content": "bob's words"})

	body := func(id string) map[string]any { return map[string]any{"id": id, "title": "ann's"} }
	free := createShape(t, ann.do("POST", "/v1/sessions", body("free")), "free")
	for _, id := range []string{"taken", "tenants"} {
		if got := createShape(t, ann.do("POST", "/v1/sessions", body(id)), id); got != free {
			t.Errorf("creating %s, held by another:\n%s\nwant, as a free id:\n%s", id, got, free)
		}
	}
	// Taken in ann's own space: a conflict, as for any key.
	for _, id := range []string{"free", "taken", "tenants"} {
		ann.do("POST", "/v1/sessions", body(id)).wantProblem(t, http.StatusConflict, "conflict")
	}

	// Each reads its own.
	if s := mustGetSession(t, ann, "taken"); s.ID != "taken" || *s.Title != "ann's" || *s.UserID != "ann" || s.MessageCount != 0 {
		t.Errorf("ann reads %+v", s)
	}
	if s := mustGetSession(t, bob, "taken"); *s.Title != "bob's" || *s.UserID != "bob" || s.MessageCount != 1 {
		t.Errorf("bob reads %+v", s)
	}
	mustAppend(t, ann, "taken", map[string]any{"role": "user", "content": "ann's words"})
	if s := mustGetSession(t, bob, "taken"); s.MessageCount != 1 {
		t.Errorf("ann's append reached bob's session: %+v", s)
	}
	if s := mustGetSession(t, admin, "tenants"); *s.Title != "no user's" || s.UserID != nil {
		t.Errorf("the tenant's session: %+v", s)
	}

	// Keys bound to no user see the stored ids, and address them.
	moved := model.UserSessionID("taken", "ann")
	// '!' raw in the path, or escaped, as Go's and Python's clients send it.
	for _, path := range []string{moved, strings.Replace(moved, "!", "%21", 1)} {
		if s := mustGetSession(t, admin, path); s.ID != moved || *s.Title != "ann's" || *s.UserID != "ann" || s.MessageCount != 1 {
			t.Errorf("admin reads %s: %+v", path, s)
		}
	}
	var ids []string
	for _, s := range listAll[model.Session](t, admin, "/v1/sessions", 100) {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	want := []string{"free", "taken", moved, model.UserSessionID("tenants", "ann"), "tenants"}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("admin lists %v, want %v", ids, want)
	}
	// A user addresses its sessions by the ids it chose, never by a stored
	// form, its own or another's.
	for _, id := range []string{moved, model.UserSessionID("taken", "bob"), "tenants!0123456789abcdef"} {
		ann.do("GET", "/v1/sessions/"+id, nil).wantProblem(t, http.StatusNotFound, "not_found")
	}

	// A fork takes its id in the user's space too.
	var fork model.Session
	ann.do("POST", "/v1/sessions/taken/fork", map[string]any{"id": "tenants-fork"}).want(t, http.StatusCreated, &fork)
	mustCreateSession(t, admin, map[string]any{"id": "later"})
	ann.do("POST", "/v1/sessions/taken/fork", map[string]any{"id": "later"}).want(t, http.StatusCreated, &fork)
	if fork.ID != "later" || *fork.ParentID != "taken" || *fork.UserID != "ann" {
		t.Errorf("fork %+v", fork)
	}
	ann.do("POST", "/v1/sessions/taken/fork", map[string]any{"id": "later"}).wantProblem(t, http.StatusConflict, "conflict")
	bob.do("POST", "/v1/sessions/free/fork", map[string]any{"id": "x"}).wantProblem(t, http.StatusNotFound, "not_found")

	// Exported and imported back by a key bound to no user, a moved session
	// keeps its stored id, and its user reads it as before.
	export := mustExport(t, admin, moved)
	admin.do("DELETE", "/v1/sessions/"+moved+"?purge=true", nil).want(t, http.StatusNoContent, nil)
	ann.do("GET", "/v1/sessions/taken", nil).wantProblem(t, http.StatusNotFound, "not_found")
	if s := mustImport(t, admin, export, ""); s.ID != moved {
		t.Errorf("imported as %s, want %s", s.ID, moved)
	}
	if s := mustGetSession(t, ann, "taken"); *s.Title != "ann's" || s.MessageCount != 1 {
		t.Errorf("ann reads the imported session: %+v", s)
	}
	// An import may not give ann two sessions that both read as one id (bob's
	// "taken" goes first, so that the id itself is free), nor a moved id of
	// another user than the session's.
	withID := func(id string) []byte {
		lines := splitLines(t, export)
		for i := range lines {
			lines[i] = bytes.ReplaceAll(lines[i], []byte(`"`+moved+`"`), []byte(`"`+id+`"`))
		}
		return reseal(t, lines)
	}
	admin.do("DELETE", "/v1/sessions/taken?purge=true", nil).want(t, http.StatusNoContent, nil)
	importNDJSON(admin, withID("taken"), "").wantProblem(t, http.StatusConflict, "conflict")
	admin.do("POST", "/v1/sessions", map[string]any{"id": "taken", "user_id": "ann"}).wantProblem(t, http.StatusConflict, "conflict")
	importNDJSON(admin, withID(model.UserSessionID("other", "bob")), "").wantProblem(t, http.StatusUnprocessableEntity, "invalid_import")
	admin.do("DELETE", "/v1/sessions/"+moved+"?purge=true", nil).want(t, http.StatusNoContent, nil)
	if s := mustImport(t, admin, withID("taken2"), ""); s.ID != "taken2" || *s.UserID != "ann" {
		t.Errorf("imported %+v", s)
	}
}

// Whatever route a bound key calls on a session stored under a moved id,
// nothing it is sent (bodies, events, NDJSON lines, problems, Location,
// cursors) holds the stored form, and every ETag is the hash of the body it
// came with.
func TestUserBoundAnswersShowChosenIDs(t *testing.T) {
	root := newClient(t)
	admin, ann, _ := userKeys(t, root)
	mustCreateSession(t, admin, map[string]any{"id": "x"})
	mustCreateSession(t, ann, map[string]any{"id": "x"}) // moved
	suffix := []byte(model.UserSpaceSuffix("ann"))
	check := func(what string, r *response) {
		t.Helper()
		if bytes.Contains(r.Body, suffix) {
			t.Errorf("%s: the body holds the stored id: %s", what, r.Body)
		}
		for name, values := range r.Header {
			for _, v := range values {
				if strings.Contains(v, string(suffix)) {
					t.Errorf("%s: header %s holds the stored id: %s", what, name, v)
				}
			}
		}
		if tag := r.Header.Get("ETag"); tag != "" && r.Status == http.StatusOK {
			sum := sha256.Sum256(r.Body)
			if tag != `"`+hex.EncodeToString(sum[:])+`"` {
				t.Errorf("%s: ETag %s is not the hash of the body", what, tag)
			}
		}
	}
	events := openFeed(t, ann, "/v1/sessions/x/events")

	msg := map[string]any{"role": "user", "content": "hello"}
	var m model.Message
	r := ann.do("POST", "/v1/sessions/x/messages", msg).want(t, http.StatusCreated, &m)
	check("append", r)
	if m.SessionID != "x" {
		t.Errorf("appended to %q", m.SessionID)
	}
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		headers      []string
	}{
		{"GET", "/v1/sessions/x", nil, 200, nil},
		{"GET", "/v1/sessions", nil, 200, nil},
		{"PATCH", "/v1/sessions/x", map[string]any{"title": "t"}, 200, nil},
		{"POST", "/v1/sessions/x/messages/batch", map[string]any{"messages": []any{msg}}, 201, nil},
		{"POST", "/v1/sessions/x/messages", `{"role":"assistant","content":"hi"}` + "\n", 200, []string{"Content-Type", "application/x-ndjson"}},
		{"GET", "/v1/sessions/x/messages", nil, 200, nil},
		{"GET", "/v1/sessions/x/messages/" + m.ID, nil, 200, nil},
		{"PUT", "/v1/sessions/x/checkpoint", map[string]any{"iteration": 1, "state": map[string]any{"step": 1}}, 201, nil},
		{"PATCH", "/v1/sessions/x/checkpoint", map[string]any{"iteration": 2, "state_patch": map[string]any{"step": 2}}, 201, nil},
		{"GET", "/v1/sessions/x/checkpoint", nil, 200, nil},
		{"GET", "/v1/sessions/x/checkpoints", nil, 200, nil},
		{"GET", "/v1/sessions/x/checkpoints/1", nil, 200, nil},
		{"GET", "/v1/sessions/x/resume", nil, 200, nil},
		{"GET", "/v1/sessions/x/context", nil, 200, nil},
		{"POST", "/v1/sessions/x/compactions", map[string]any{"through_seq": 1, "summary": "s", "tokens": 1}, 201, nil},
		{"GET", "/v1/sessions/x/compactions", nil, 200, nil},
		{"GET", "/v1/sessions/x/export", nil, 200, nil},
		{"POST", "/v1/sessions/x/fork", map[string]any{"id": "y"}, 201, nil},
		{"POST", "/v1/sessions/x/repair", map[string]any{}, 200, nil},
		{"POST", "/v1/sessions/x/rewind", map[string]any{"to_seq": 3, "messages": []any{msg}}, 200, nil},
		{"DELETE", "/v1/sessions/x", nil, 200, nil},
		{"POST", "/v1/sessions/x/messages", msg, 409, nil},
		{"POST", "/v1/sessions/x/rewind", map[string]any{"to_seq": 1}, 409, nil},
	} {
		r := ann.do(tc.method, tc.path, tc.body, tc.headers...)
		if r.Status != tc.status {
			t.Fatalf("%s %s = %d, want %d: %s", tc.method, tc.path, r.Status, tc.status, r.Body)
		}
		check(tc.method+" "+tc.path, r)
		var p problem
		if tc.status == 409 && (json.Unmarshal(r.Body, &p) != nil || !(strings.Contains(p.Detail, `"x"`) || strings.Contains(p.Detail, " x "))) {
			t.Errorf("%s %s: the problem does not name x: %s", tc.method, tc.path, r.Body)
		}
	}
	var fork model.Session
	ann.do("GET", "/v1/sessions/y", nil).want(t, http.StatusOK, &fork)
	if *fork.ParentID != "x" {
		t.Errorf("fork's parent_id %q", *fork.ParentID)
	}
	events.must("message.appended")
	events.close()
	if bytes.Contains(events.raw.Bytes(), suffix) {
		t.Errorf("the event stream holds the stored id: %s", events.raw.Bytes())
	}
	if !bytes.Contains(events.raw.Bytes(), []byte(`"session_id":"x"`)) {
		t.Errorf("the event stream names no session x: %s", events.raw.Bytes())
	}
	if r := admin.do("GET", "/v1/sessions/"+model.UserSessionID("x", "ann"), nil).want(t, http.StatusOK, nil); !bytes.Contains(r.Body, suffix) {
		t.Errorf("a key bound to no user is shown %s", r.Body)
	}
}

// A bound key's session list, walked a page at a time, shows every session
// once by the id it chose, in the order of those ids, and its cursors carry
// no stored id.
func TestUserBoundSessionListPages(t *testing.T) {
	root := newClient(t)
	admin, ann, _ := userKeys(t, root)
	// Prefixes of one another: the ids whose order a suffix could change.
	ids := []string{"a", "a-", "a-b", "a.", "a0", "aa", "b", "ab"}
	for _, id := range ids[:4] {
		mustCreateSession(t, admin, map[string]any{"id": id})
	}
	for _, id := range ids {
		mustCreateSession(t, ann, map[string]any{"id": id})
	}
	// Newest first, then by id descending: the order of every session list,
	// here of the ids ann chose.
	want := listAll[model.Session](t, admin, "/v1/sessions?user_id=ann", 100)
	for i := range want {
		want[i].ID = model.ShownSessionID(want[i].ID, "ann")
	}
	slices.SortFunc(want, func(a, b model.Session) int {
		if a.CreatedAt != b.CreatedAt {
			return int(b.CreatedAt - a.CreatedAt)
		}
		return strings.Compare(b.ID, a.ID)
	})
	suffix := model.UserSpaceSuffix("ann")
	for _, limit := range []int{1, 2, 3, 100} {
		var got []model.Session
		next := ""
		for {
			var p model.Page[model.Session]
			ann.do("GET", "/v1/sessions?limit="+strconv.Itoa(limit)+next, nil).
				want(t, http.StatusOK, &p)
			got = append(got, p.Data...)
			if !p.HasMore {
				break
			}
			raw, err := base64.RawURLEncoding.DecodeString(*p.NextCursor)
			if err != nil || strings.Contains(string(raw), suffix) {
				t.Fatalf("cursor %s (%s) holds the stored id", *p.NextCursor, raw)
			}
			next = "&cursor=" + *p.NextCursor
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d sessions, want %d", limit, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID {
				t.Errorf("limit %d: #%d is %s, want %s", limit, i, got[i].ID, want[i].ID)
			}
		}
	}
}
