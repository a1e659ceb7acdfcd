package ckstate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func TestFence(t *testing.T) {
	i := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		it       int64
		expected *int64
		latest   int64
		msg      string // "" for a pass
	}{
		{2, i(1), 1, ""},
		{7, nil, 1, ""},
		{1, nil, 0, ""},
		{1, nil, 1, "iteration 1 is not above the latest checkpoint's 1"},
		{2, i(0), 1, "expected_iteration is 0 but the latest checkpoint is iteration 1: another worker wrote since"},
		{1, i(3), 5, "expected_iteration is 3 but the latest checkpoint is iteration 5: another worker wrote since"},
	} {
		err := Fence(Write{Iteration: tc.it, Expected: tc.expected}, tc.latest)
		if tc.msg == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc, err)
			}
			continue
		}
		e := model.AsError(err)
		if e.Code != "stale_iteration" || e.Kind != model.KindConflict || e.Msg != tc.msg || e.Extra["latest_iteration"] != tc.latest {
			t.Errorf("%+v: %+v", tc, e)
		}
	}
}

func TestWriteInputs(t *testing.T) {
	for _, st := range []string{`[1]`, `null`, `"x"`, `{`} {
		_, err := PutWrite(model.PutCheckpoint{Iteration: 1, State: model.JSON(st)})
		if e := model.AsError(err); e.Code != "validation_failed" || len(e.Fields) != 1 || e.Fields[0].Field != "state" {
			t.Errorf("PUT %s: %v", st, err)
		}
		_, err = PatchWrite(model.PatchCheckpoint{Iteration: 1, StatePatch: model.JSON(st)})
		if e := model.AsError(err); e.Code != "validation_failed" || len(e.Fields) != 1 || e.Fields[0].Field != "state_patch" {
			t.Errorf("PATCH %s: %v", st, err)
		}
	}
	w, err := PutWrite(model.PutCheckpoint{Iteration: 3, State: model.JSON(`{"pause_until_ms":42}`)})
	if err != nil || w.Pause == nil || *w.Pause != 42 || w.Iteration != 3 {
		t.Errorf("PUT with a pause: %+v %v", w, err)
	}
}

// What a plan reports once the fence has passed, in Plan.Err.
func TestPlanErrors(t *testing.T) {
	patch := func(p string) Write {
		w, err := PatchWrite(model.PatchCheckpoint{Iteration: 2, StatePatch: model.JSON(p)})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	small := latestOf(t, 1, `{"a":1}`)
	damaged := Latest{Found: true, Iteration: 1, Err: model.Corrupted("checkpoint", "ckp_1")}
	big := fmt.Sprintf(`{"blob":%q}`, strings.Repeat("x", model.MaxStateBytes))
	for _, tc := range []struct {
		name   string
		w      Write
		latest Latest
		code   string
		field  string
	}{
		{"no_checkpoint", patch(`{"a":1}`), Latest{}, "no_checkpoint", ""},
		{"corrupted_latest", patch(`{"a":1}`), damaged, "corrupted", ""},
		{"patch_grows_past_limit", patch(big), small, "validation_failed", "state_patch"},
		{"patched_state_invalid", patch(`{"pause_until_ms":"soon"}`), small, "validation_failed", "state_patch.pause_until_ms"},
		{"put_past_limit", Write{Iteration: 2, Tree: map[string]any{"blob": strings.Repeat("x", model.MaxStateBytes)}}, small, "validation_failed", "state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanWrite("s", tc.w, tc.latest)
			if err != nil {
				t.Fatal(err)
			}
			e := model.AsError(p.Err)
			if p.Err == nil || e.Code != tc.code || (tc.field != "" && (len(e.Fields) != 1 || e.Fields[0].Field != tc.field)) {
				t.Errorf("plan error %v, want %s naming %q", p.Err, tc.code, tc.field)
			}
		})
	}
	p, err := PlanWrite("s", patch(`{"a":null,"b":{"c":2},"pause_until_ms":9}`), small)
	if err != nil || p.Err != nil || string(p.Canonical) != `{"b":{"c":2},"pause_until_ms":9}` || p.Pause == nil || *p.Pause != 9 {
		t.Errorf("plan %s pause %v: %v %v", p.Canonical, p.Pause, err, p.Err)
	}
	if !p.Stale(2, small.SHA256) || p.Stale(1, small.SHA256) || !p.Stale(1, "other") {
		t.Error("Stale does not compare both iteration and hash")
	}
}

// A graph write is numbered latest+1 and fenced only by expected_iteration;
// each namespace's fence names it.
func TestGraphWriteFence(t *testing.T) {
	i := func(n int64) *int64 { return &n }
	w, err := GraphWrite(model.CreateCheckpoint{Namespace: "sub", StatePatch: model.JSON(`{"a":1}`), ExpectedIteration: i(4)})
	if err != nil || !w.Graph || w.Patch == nil || w.Iteration != 0 {
		t.Fatalf("GraphWrite: %+v %v", w, err)
	}
	if err := Fence(w, 4); err != nil || w.Number(4) != 5 {
		t.Errorf("expected 4 at latest 4: %v, number %d", err, w.Number(4))
	}
	e := model.AsError(Fence(w, 6))
	if e.Code != "stale_iteration" || !strings.Contains(e.Msg, `of namespace "sub"`) {
		t.Errorf("stale: %+v", e)
	}
	if _, err := GraphWrite(model.CreateCheckpoint{State: model.JSON(`[1]`)}); model.AsError(err).Code != "validation_failed" {
		t.Errorf("a state not an object: %v", err)
	}
}

// A root's patch is its whole state; a line's PATCH without a latest is
// no_checkpoint, as before.
func TestPlanRootPatch(t *testing.T) {
	w, _ := GraphWrite(model.CreateCheckpoint{StatePatch: model.JSON(`{"a":1,"b":null}`)})
	p, err := PlanWrite("s", w, Latest{})
	if err != nil || p.Err != nil || string(p.Canonical) != `{"a":1}` || p.Delta != nil {
		t.Errorf("root patch: %s %v %v", p.Canonical, err, p.Err)
	}
	line, _ := PatchWrite(model.PatchCheckpoint{Iteration: 1, StatePatch: model.JSON(`{"a":1}`)})
	if p, _ := PlanWrite("s", line, Latest{}); model.AsError(p.Err).Code != "no_checkpoint" {
		t.Errorf("line patch without a latest: %v", p.Err)
	}
}
