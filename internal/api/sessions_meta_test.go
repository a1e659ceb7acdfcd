package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// A list by a metadata value reads the metadata index, which every write of a
// session's metadata keeps: a PATCH moves a session from one value to another,
// a purge takes it out, and a value too long for the index is still found.
func TestMetadataFilterFollowsWrites(t *testing.T) {
	c := newClient(t)
	long := strings.Repeat("w", 300)
	a := mustCreateSession(t, c, map[string]any{"metadata": map[string]any{"team": "red", "note": long}})
	b := mustCreateSession(t, c, map[string]any{"metadata": map[string]any{"team": "red"}})
	ids := func(query string) string {
		t.Helper()
		var out []string
		for _, s := range listAll[model.Session](t, c, "/v1/sessions?"+query, 1) {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ query, want string }{
		{"metadata.team=red", b.ID + "," + a.ID},
		{"metadata.note=" + url.QueryEscape(long), a.ID},
		{"metadata.team=red&metadata.note=" + url.QueryEscape(long), a.ID},
	} {
		if got := ids(tc.query); got != tc.want {
			t.Errorf("%.40s: %s, want %s", tc.query, got, tc.want)
		}
	}
	c.do("PATCH", "/v1/sessions/"+a.ID, map[string]any{"metadata": map[string]any{"team": "blue"}}).want(t, http.StatusOK, nil)
	if got := ids("metadata.team=red"); got != b.ID {
		t.Errorf("red after a PATCH to blue: %s, want %s", got, b.ID)
	}
	if got := ids("metadata.team=blue"); got != a.ID {
		t.Errorf("blue after a PATCH: %s, want %s", got, a.ID)
	}
	c.do("DELETE", "/v1/sessions/"+a.ID+"?purge=true", nil).want(t, http.StatusNoContent, nil)
	if got := ids("metadata.team=blue"); got != "" {
		t.Errorf("blue after a purge: %s, want none", got)
	}
}
