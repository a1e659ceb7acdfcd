package ckstate

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func TestMergeDiff(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		ok             bool
	}{
		{"equal", `{"a":1}`, `{"a":1}`, true},
		{"change_and_remove", `{"a":1,"b":2}`, `{"a":3}`, true},
		{"nested", `{"a":{"b":{"c":1,"d":2}}}`, `{"a":{"b":{"c":1,"d":3},"e":4}}`, true},
		{"object_replaces_scalar", `{"a":1}`, `{"a":{"b":2}}`, true},
		{"scalar_replaces_object", `{"a":{"b":2}}`, `{"a":1}`, true},
		{"arrays_whole_nulls_and_all", `{"a":[1,2]}`, `{"a":[1,null,{"b":null}]}`, true},
		{"unchanged_null_stays", `{"a":null,"b":1}`, `{"a":null,"b":2}`, true},
		{"set_null", `{"a":1}`, `{"a":null}`, false},
		{"add_null", `{}`, `{"a":null}`, false},
		{"null_inside_new_object", `{"a":1}`, `{"a":{"b":null}}`, false},
		{"null_inside_nested_change", `{"a":{"b":1}}`, `{"a":{"b":null}}`, false},
		{"numbers_kept_exact", `{"a":1.0}`, `{"a":1.00,"b":12345678901234567890}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, _ := DecodeTree([]byte(tc.from))
			to, _ := DecodeTree([]byte(tc.to))
			p, ok := MergeDiff(from.(map[string]any), to.(map[string]any))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (patch %v)", ok, tc.ok, p)
			}
			if ok && !reflect.DeepEqual(model.MergePatch(from, p), to) {
				t.Errorf("patch %v turns %s into %v, not %s", p, tc.from, model.MergePatch(from, p), tc.to)
			}
		})
	}
}

// latestOf describes a full row of state as a write would find it.
func latestOf(t *testing.T, it int64, state string) Latest {
	t.Helper()
	canon, err := Canonical([]byte(state))
	if err != nil {
		t.Fatal(err)
	}
	tree, _ := DecodeTree(canon)
	return Latest{Found: true, Iteration: it, SHA256: Hash(it, 0, canon), Stored: EncodeFull(canon).Size(), Size: len(canon), Tree: tree}
}

func TestReverseDelta(t *testing.T) {
	pad := strings.Repeat("x", 2*DeltaAbove)
	next, _ := DecodeTree([]byte(`{"pad":"` + pad + `","n":2}`))
	base := latestOf(t, 4, `{"pad":"`+pad+`","n":1,"gone":true}`)
	d := ReverseDelta(next, base)
	if d == nil {
		t.Fatal("no delta for a small change of a large state")
	}
	if d.Iteration != 4 || d.SHA256 != base.SHA256 || d.Full != base.Stored {
		t.Errorf("delta %+v does not name its row", d)
	}
	raw, err := DecodeBody(d.Codec, d.Body)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := DecodeTree(raw)
	if got := model.MergePatch(next, p); !reflect.DeepEqual(got, base.Tree) {
		t.Errorf("the delta %s does not lead back", raw)
	}

	for name, tc := range map[string]struct {
		next string
		base Latest
	}{
		"small_state":   {`{"a":2}`, latestOf(t, 1, `{"a":1}`)},
		"no_tree":       {`{"a":2}`, Latest{Found: true, Size: 4 * DeltaAbove, Stored: 4 * DeltaAbove}},
		"needs_null":    {`{"pad":"` + pad + `"}`, latestOf(t, 1, `{"pad":"`+pad+`","a":null}`)},
		"patch_too_big": {`{"pad":"` + strings.Repeat("y", 2*DeltaAbove) + `"}`, latestOf(t, 1, `{"pad":"`+pad+`"}`)},
	} {
		n, _ := DecodeTree([]byte(tc.next))
		if d := ReverseDelta(n, tc.base); d != nil {
			t.Errorf("%s: a delta of %d bytes, want none", name, len(d.Body))
		}
	}
}

func TestDeltaFits(t *testing.T) {
	d := &Delta{Body: make([]byte, 10), Full: 100}
	for _, tc := range []struct {
		rows, bytes int64
		want        bool
	}{
		{0, 0, true},
		{SnapshotEvery - 2, 0, true},
		{SnapshotEvery - 1, 0, false}, // would make a run of SnapshotEvery
		{3, 90, true},
		{3, 91, false}, // the run would outweigh the row whole
	} {
		if got := d.Fits(tc.rows, tc.bytes); got != tc.want {
			t.Errorf("Fits(%d, %d) = %v, want %v", tc.rows, tc.bytes, got, tc.want)
		}
	}
}

// The stored form of a delta is JSON of the patch: check that numbers stay
// digit for digit through it.
func TestDeltaKeepsNumbers(t *testing.T) {
	pad := strings.Repeat("x", 2*DeltaAbove)
	next, _ := DecodeTree([]byte(`{"pad":"` + pad + `","n":1}`))
	base := latestOf(t, 1, `{"pad":"`+pad+`","n":1.50e3}`)
	d := ReverseDelta(next, base)
	if d == nil {
		t.Fatal("no delta")
	}
	raw, _ := DecodeBody(d.Codec, d.Body)
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil || string(p["n"]) != "1.50e3" {
		t.Errorf("patch %s", raw)
	}
}
