package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// A LangGraph thread exported mid-run keeps its pending writes: those of a
// checkpoint that exists, a special channel's, and those recorded before
// their checkpoint. An import (as it was, or as new) restores them with
// their checkpoints, and exports back to the same bytes.
func TestExportCarriesPendingWrites(t *testing.T) {
	src := newClient(t)
	mustCreateSession(t, src, map[string]any{"id": "thread"})
	src.do("POST", "/v1/sessions/thread/checkpoints", map[string]any{"client_id": "c1", "state": map[string]any{"n": 1}}).
		want(t, http.StatusCreated, nil)
	src.do("POST", "/v1/sessions/thread/checkpoints", map[string]any{"namespace": "sub", "client_id": "s1", "state": map[string]any{}}).
		want(t, http.StatusCreated, nil)
	for _, w := range []map[string]any{
		{"checkpoint_id": "c1", "task_id": "t1", "task_path": "~a", "writes": []map[string]any{{"channel": "out", "value": map[string]any{"x": []int{1, 2}}}, {"channel": "log", "value": "ü"}}},
		{"checkpoint_id": "c1", "task_id": "t2", "writes": []map[string]any{{"channel": "__interrupt__", "value": map[string]any{"ask": "ok?"}}}},
		{"namespace": "sub", "checkpoint_id": "s2", "task_id": "t9", "writes": []map[string]any{{"channel": "early", "value": nil}}},
	} {
		src.do("POST", "/v1/sessions/thread/checkpoint-writes", w).want(t, http.StatusNoContent, nil)
	}
	first := mustExport(t, src, "thread")
	if n := bytes.Count(first, []byte(`{"type":"checkpoint_write",`)); n != 4 {
		t.Fatalf("the export holds %d pending writes, want 4:\n%s", n, first)
	}

	dst := newClient(t)
	mustImport(t, dst, first, "")
	if second := mustExport(t, dst, "thread"); !bytes.Equal(first, second) {
		t.Fatalf("export → import → export changed the bytes:\n%s", firstDiff(first, second))
	}
	fresh := mustImport(t, dst, first, "?as_new=true")
	for _, id := range []string{"thread", fresh.ID} {
		var c model.Checkpoint
		dst.do("GET", "/v1/sessions/"+id+"/checkpoint?client_id=c1", nil).want(t, http.StatusOK, &c)
		if len(c.PendingWrites) != 3 {
			t.Errorf("%s: c1's pending writes after import: %+v", id, c.PendingWrites)
		}
	}

	// A write line the writes route would refuse is refused by the import,
	// naming its line and field, and nothing is stored.
	lines := splitLines(t, first)
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"channel":"__interrupt__"`)) {
			lines[i] = []byte(strings.Replace(string(l), `"idx":-3`, `"idx":7`, 1))
		}
	}
	p := importNDJSON(dst, reseal(t, lines), "?as_new=true").wantProblem(t, http.StatusUnprocessableEntity, "invalid_import")
	if !strings.Contains(p.Detail, "checkpoint_write.idx") {
		t.Errorf("the refusal does not name the field: %+v", p)
	}
}
