package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/logbook/logbook/internal/model"
)

// Dashboards poll sessions, pages and checkpoints; a tagged answer lets them
// ask "still the same?" and get a bodiless 304 back. The tag is the SHA-256 of
// the exact body, as a file's is of its bytes (downloadFile): it is right
// whatever changed the answer (an append, a repair, a rewind, a prune, a page's
// cursor), where a version number would have to be bumped by every one of them.
// A version would not save the read either, only this hash of bytes already in
// memory: the store is asked in both cases.

// writeTaggedJSON is writeTagged for a value encoding/json encodes.
func (s *Server) writeTaggedJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.writeError(w, r, model.Internal(err))
		return
	}
	s.writeTagged(w, r, b)
}

// writeTagged answers 200 with the JSON body b (writeBody adds its newline) and
// its ETag, or 304 when the client's If-None-Match already names that body.
func (s *Server) writeTagged(w http.ResponseWriter, r *http.Request, b []byte) {
	// The tag of the body the key is shown: one of the stored body would tell
	// a user-bound key which of its sessions' ids were moved (user_ids.go).
	b = shownBody(r, b)
	sum := sha256.New()
	sum.Write(b)
	sum.Write([]byte{'\n'})
	tag := `"` + hex.EncodeToString(sum.Sum(nil)) + `"`
	h := w.Header()
	h.Set("ETag", tag)
	// A browser may keep the answer but must ask before each reuse: it changes
	// whenever the session does. private keeps a tenant's data out of shared
	// caches even in open mode, where requests carry no Authorization.
	h.Set("Cache-Control", "private, no-cache")
	if notModified(r, tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.writeBody(w, http.StatusOK, b)
}

// notModified reports whether a GET's If-None-Match names etag, so that the
// answer is 304 (RFC 9110 §13.1.2): `*`, or a list of tags compared weakly
// (W/"x" matches "x"). A malformed header matches nothing, which costs the
// client a full answer and nothing else.
func notModified(r *http.Request, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	for _, list := range r.Header.Values("If-None-Match") {
		for {
			list = strings.TrimLeft(list, " \t,")
			if list == "" {
				break
			}
			if list[0] == '*' {
				return true
			}
			list = strings.TrimPrefix(list, "W/")
			// An entity tag may hold commas, so the list is scanned quote to
			// quote rather than split.
			if list == "" || list[0] != '"' {
				break
			}
			end := strings.IndexByte(list[1:], '"')
			if end < 0 {
				break
			}
			if list[:end+2] == want {
				return true
			}
			list = list[end+2:]
		}
	}
	return false
}
