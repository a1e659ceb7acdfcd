package api_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func patchCheckpoint(c *client, sessionID string, body any) *response {
	return c.do("PATCH", "/v1/sessions/"+sessionID+"/checkpoint", body)
}

// bigState is a state of a few KB, so that the server keeps it compressed and
// the ones before it as deltas: twenty notes, one rewritten each iteration.
func bigState(it int) map[string]any {
	notes := map[string]any{}
	for i := range 20 {
		notes[noteKey(i)] = plainNote(i)
	}
	notes[noteKey(it)] = fmt.Sprintf("rewritten at iteration %d", it)
	return map[string]any{"iteration_seen": it, "notes": notes, "stop_reason": "tool_use"}
}

func noteKey(i int) string { return fmt.Sprintf("n%02d", i%20) }

// plainNote is a note that compresses about as well as real ones do, which
// is not very: text a few times repeated would make every state tiny on disk.
func plainNote(i int) string {
	var b strings.Builder
	for j := range 4 {
		fmt.Fprintf(&b, "%x ", sha256.Sum256([]byte(fmt.Sprint(i%20, j))))
	}
	return b.String()
}

// bigPatch turns bigState(it-1) into bigState(it).
func bigPatch(it int) map[string]any {
	return map[string]any{"iteration_seen": it, "notes": map[string]any{
		noteKey(it - 1): plainNote(it - 1), noteKey(it): fmt.Sprintf("rewritten at iteration %d", it)}}
}

func TestPatchCheckpoint(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	w := c.as(mustKey(t, c, "a", model.ScopeWrite).Key)
	other := c.as(mustKey(t, c, "b", model.ScopeWrite).Key)
	s := mustCreateSession(t, w, nil)
	empty := mustCreateSession(t, w, nil)
	putCheckpoint(w, s.ID, 1, nil, map[string]any{"a": 1, "b": map[string]any{"c": 2}}).want(t, http.StatusCreated, nil)

	var got model.Checkpoint
	patchCheckpoint(w, s.ID, map[string]any{"iteration": 2, "expected_iteration": 1,
		"state_patch": map[string]any{"a": nil, "b": map[string]any{"d": 3}}}).want(t, http.StatusCreated, &got)
	if got.Iteration != 2 || string(got.State) != `{"b":{"c":2,"d":3}}` || len(got.SHA256) != 64 {
		t.Fatalf("patched %+v state %s", got, got.State)
	}
	var latest model.Checkpoint
	w.do("GET", "/v1/sessions/"+s.ID+"/checkpoint", nil).want(t, http.StatusOK, &latest)
	if latest.ID != got.ID || latest.SHA256 != got.SHA256 || string(latest.State) != string(got.State) {
		t.Errorf("latest %+v, want what PATCH answered %+v", latest, got)
	}

	for _, tc := range []struct {
		name    string
		c       *client
		session string
		body    any
		status  int
		code    string
		field   string // the field a 422 names
		latest  int64  // stale_iteration's latest_iteration
	}{
		{"iteration_not_above_latest", w, s.ID, map[string]any{"iteration": 2, "state_patch": map[string]any{}}, 409, "stale_iteration", "", 2},
		{"expected_iteration_not_latest", w, s.ID, map[string]any{"iteration": 3, "expected_iteration": 1, "state_patch": map[string]any{}},
			409, "stale_iteration", "", 2},
		{"no_checkpoint_yet", w, empty.ID, map[string]any{"iteration": 1, "state_patch": map[string]any{"a": 1}}, 409, "no_checkpoint", "", 0},
		{"unknown_session", w, "nope", map[string]any{"iteration": 3, "state_patch": map[string]any{}}, 404, "not_found", "", 0},
		{"other_tenants_session", other, s.ID, map[string]any{"iteration": 3, "state_patch": map[string]any{}}, 404, "not_found", "", 0},
		{"state_patch_missing", w, s.ID, map[string]any{"iteration": 3}, 422, "validation_failed", "state_patch", 0},
		{"state_patch_not_an_object", w, s.ID, map[string]any{"iteration": 3, "state_patch": []int{1}}, 422, "validation_failed", "state_patch", 0},
		{"iteration_missing", w, s.ID, map[string]any{"state_patch": map[string]any{}}, 422, "validation_failed", "iteration", 0},
		{"unknown_field", w, s.ID, map[string]any{"iteration": 3, "state": map[string]any{}}, 422, "validation_failed", "state", 0},
		{"patched_state_invalid", w, s.ID, map[string]any{"iteration": 3, "state_patch": map[string]any{"pause_until_ms": "soon"}},
			422, "validation_failed", "state_patch.pause_until_ms", 0},
		{"not_json", w, s.ID, `{"iteration":`, 400, "malformed_json", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := patchCheckpoint(tc.c, tc.session, tc.body)
			p := res.wantProblem(t, tc.status, tc.code)
			if tc.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != tc.field) {
				t.Errorf("errors %+v, want one naming %s", p.Errors, tc.field)
			}
			if tc.code == "stale_iteration" {
				var extra struct {
					Latest int64 `json:"latest_iteration"`
				}
				if err := json.Unmarshal(res.Body, &extra); err != nil || extra.Latest != tc.latest {
					t.Errorf("latest_iteration %d (%v), want %d", extra.Latest, err, tc.latest)
				}
			}
		})
	}
	w.do("GET", "/v1/sessions/"+s.ID+"/checkpoint", nil).want(t, http.StatusOK, &latest)
	if latest.Iteration != 2 {
		t.Errorf("refused patches wrote: latest is %d", latest.Iteration)
	}
}

// readPaths renders every read of a session's checkpoints through the API:
// latest, each by iteration, the list, resume and export. Ids and times differ
// between sessions; the rest must not.
func readPaths(t *testing.T, c *client, id string) []string {
	t.Helper()
	show := func(path string, cp model.Checkpoint) string {
		return fmt.Sprintf("%s %d %d %s %s", path, cp.Iteration, cp.LastSeq, cp.SHA256, cp.State)
	}
	var out []string
	var latest model.Checkpoint
	c.do("GET", "/v1/sessions/"+id+"/checkpoint", nil).want(t, http.StatusOK, &latest)
	out = append(out, show("latest", latest))
	for _, cp := range listAll[model.Checkpoint](t, c, "/v1/sessions/"+id+"/checkpoints", 3) {
		out = append(out, show("list", cp))
		var one model.Checkpoint
		c.do("GET", fmt.Sprintf("/v1/sessions/%s/checkpoints/%d", id, cp.Iteration), nil).want(t, http.StatusOK, &one)
		out = append(out, show("get", one))
	}
	var r model.Resume
	c.do("GET", "/v1/sessions/"+id+"/resume", nil).want(t, http.StatusOK, &r)
	out = append(out, show("resume", *r.Checkpoint))
	res := c.do("GET", "/v1/sessions/"+id+"/export", nil).want(t, http.StatusOK, nil)
	sc := bufio.NewScanner(bytes.NewReader(res.Body))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var l model.ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Checkpoint != nil {
			out = append(out, show("export", *l.Checkpoint))
		}
	}
	return out
}

// Every read of a PATCH-written chain is what a PUT of the merged states gives,
// across snapshots and pruning.
func TestPatchReadsAsPutThroughTheAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	c := newClient(t, withCheckpointKeep(20), withDB(path))
	put, patch := mustCreateSession(t, c, nil), mustCreateSession(t, c, nil)
	for it := 1; it <= 30; it++ {
		putCheckpoint(c, put.ID, int64(it), nil, bigState(it)).want(t, http.StatusCreated, nil)
		if it == 1 {
			putCheckpoint(c, patch.ID, 1, nil, bigState(it)).want(t, http.StatusCreated, nil)
			continue
		}
		var cp, want model.Checkpoint
		patchCheckpoint(c, patch.ID, map[string]any{"iteration": it, "expected_iteration": it - 1, "state_patch": bigPatch(it)}).
			want(t, http.StatusCreated, &cp)
		c.do("GET", "/v1/sessions/"+put.ID+"/checkpoint", nil).want(t, http.StatusOK, &want)
		if string(cp.State) != string(want.State) || cp.SHA256 != want.SHA256 {
			t.Fatalf("iteration %d: PATCH answered %.80s… %s, PUT %.80s… %s", it, cp.State, cp.SHA256, want.State, want.SHA256)
		}
	}
	var deltas, fulls int
	if err := mustRawDB(t, path).QueryRow(`SELECT COUNT(*) FILTER (WHERE kind = 'delta'), COUNT(*) FILTER (WHERE kind = 'full')
		FROM checkpoints WHERE session_id = ?`, patch.ID).Scan(&deltas, &fulls); err != nil || deltas == 0 || fulls < 2 {
		t.Fatalf("%d deltas and %d full rows (%v): the test wants chains across snapshots", deltas, fulls, err)
	}
	a, b := readPaths(t, c, put.ID), readPaths(t, c, patch.ID)
	if len(a) != 1+2*20+1+20 || strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("%d reads of the PUT session, %d of the PATCH one; they differ:\nput   %.400v\npatch %.400v", len(a), len(b), a, b)
	}
}

// A damaged delta is 409 corrupted on every read that needs it; the latest
// (always whole) still reads.
func TestCorruptedDeltaThroughTheAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	c := newClient(t, withDB(path))
	s := mustCreateSession(t, c, nil)
	for it := 1; it <= 4; it++ {
		putCheckpoint(c, s.ID, int64(it), nil, bigState(it)).want(t, http.StatusCreated, nil)
	}
	db := mustRawDB(t, path)
	var id string
	if err := db.QueryRow(`SELECT id FROM checkpoints WHERE iteration = 2 AND kind = 'delta'`).Scan(&id); err != nil {
		t.Fatalf("iteration 2 is not a delta: %v", err)
	}
	if _, err := db.Exec(`UPDATE checkpoints SET body = x'00ff' WHERE iteration = 2`); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/checkpoints/2", "/checkpoints/1", "/checkpoints", "/export"} {
		res := c.do("GET", "/v1/sessions/"+s.ID+path, nil)
		res.wantProblem(t, http.StatusConflict, "corrupted")
		if !strings.Contains(string(res.Body), id) {
			t.Errorf("%s: %s does not name %s", path, res.Body, id)
		}
	}
	c.do("GET", "/v1/sessions/"+s.ID+"/checkpoint", nil).want(t, http.StatusOK, nil)
	c.do("GET", "/v1/sessions/"+s.ID+"/checkpoints/3", nil).want(t, http.StatusOK, nil)
}
