package api_test

import (
	"net/http"
	"regexp"
	"testing"
)

var bodyETag = regexp.MustCompile(`^"[0-9a-f]{64}"$`)

// TestETagNotModified polls each tagged route as a dashboard would: the tag it
// got back answers 304 until the resource changes, and then 200 with a new tag.
func TestETagNotModified(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, nil)
	mustAppend(t, c, s.ID, userMsg("hi"))
	putCheckpoint(c, s.ID, 1, nil, map[string]any{"step": 1}).want(t, http.StatusCreated, nil)

	appendOne := func() { mustAppend(t, c, s.ID, userMsg("again")) }
	nextCheckpoint := func() func() {
		it := int64(1)
		return func() {
			prev := it
			it++
			putCheckpoint(c, s.ID, it, &prev, map[string]any{"step": it}).want(t, http.StatusCreated, nil)
		}
	}()
	cases := []struct {
		name   string
		path   string
		change func() // nil: the resource cannot change
	}{
		{"session", "/v1/sessions/" + s.ID, appendOne},
		{"messages_page", "/v1/sessions/" + s.ID + "/messages?limit=10", appendOne},
		{"latest_checkpoint", "/v1/sessions/" + s.ID + "/checkpoint", nextCheckpoint},
		{"checkpoint_list", "/v1/sessions/" + s.ID + "/checkpoints", nextCheckpoint},
		{"one_checkpoint", "/v1/sessions/" + s.ID + "/checkpoints/1", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first := c.do("GET", tc.path, nil).want(t, http.StatusOK, nil)
			tag := first.Header.Get("ETag")
			if !bodyETag.MatchString(tag) {
				t.Fatalf("ETag = %q, want the body's SHA-256, quoted", tag)
			}
			if got, want := first.Header.Get("Cache-Control"), "private, no-cache"; got != want {
				t.Errorf("Cache-Control = %q, want %q", got, want)
			}
			if again := c.do("GET", tc.path, nil).want(t, http.StatusOK, nil); again.Header.Get("ETag") != tag {
				t.Fatalf("the same body got another tag: %q, then %q", tag, again.Header.Get("ETag"))
			}

			for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, `"a,b",` + tag, "*"} {
				res := c.do("GET", tc.path, nil, "If-None-Match", inm).want(t, http.StatusNotModified, nil)
				if len(res.Body) != 0 {
					t.Errorf("If-None-Match %s: 304 with a body: %q", inm, res.Body)
				}
				if got := res.Header.Get("ETag"); got != tag {
					t.Errorf("If-None-Match %s: 304 ETag = %q, want %q", inm, got, tag)
				}
			}
			for _, inm := range []string{`"other"`, `W/"other"`, tag[1 : len(tag)-1], `"` + tag} {
				c.do("GET", tc.path, nil, "If-None-Match", inm).want(t, http.StatusOK, nil)
			}

			if tc.change == nil {
				return
			}
			tc.change()
			res := c.do("GET", tc.path, nil, "If-None-Match", tag).want(t, http.StatusOK, nil)
			if got := res.Header.Get("ETag"); got == tag || !bodyETag.MatchString(got) {
				t.Fatalf("after a change: ETag = %q, want a new one (was %q)", got, tag)
			}
		})
	}

	t.Run("star_does_not_hide_a_missing_resource", func(t *testing.T) {
		c.do("GET", "/v1/sessions/nope", nil, "If-None-Match", "*").wantProblem(t, http.StatusNotFound, "not_found")
	})
}

// TestFileETagLists checks that a file download reads If-None-Match as the
// tagged JSON routes do: lists and weak tags, not one exact string.
func TestFileETagLists(t *testing.T) {
	c := newClient(t)
	res := c.do("POST", "/v1/files", []byte("some bytes"), "Content-Type", "text/plain")
	if res.Status != http.StatusCreated {
		t.Fatalf("upload: %d %s", res.Status, res.Body)
	}
	path := res.Header.Get("Location")
	tag := c.do("GET", path, nil).want(t, http.StatusOK, nil).Header.Get("ETag")
	for _, inm := range []string{tag, "W/" + tag, `"x", ` + tag, "*"} {
		c.do("GET", path, nil, "If-None-Match", inm).want(t, http.StatusNotModified, nil)
	}
	c.do("GET", path, nil, "If-None-Match", `"x"`).want(t, http.StatusOK, nil)
}
