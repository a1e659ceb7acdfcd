package model

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMergePatch checks RFC 7396's properties on arbitrary JSON: applying a patch
// never panics, never changes its target, and applying it twice changes nothing
// more than applying it once.
func FuzzMergePatch(f *testing.F) {
	f.Add([]byte(`{"a":"b","c":{"d":1}}`), []byte(`{"a":null,"c":{"e":[1,2]}}`))
	f.Add([]byte(`[]`), []byte(`{"a":{"b":null}}`))
	f.Fuzz(func(t *testing.T, target, patch []byte) {
		var tv, pv any
		if json.Unmarshal(target, &tv) != nil || json.Unmarshal(patch, &pv) != nil {
			t.Skip()
		}
		before, _ := json.Marshal(tv)
		once := MergePatch(tv, pv)
		twice := MergePatch(once, pv)
		after, _ := json.Marshal(tv)
		if !bytes.Equal(before, after) {
			t.Fatalf("target changed: %s → %s", before, after)
		}
		a, _ := json.Marshal(once)
		b, _ := json.Marshal(twice)
		if !bytes.Equal(a, b) {
			t.Fatalf("not idempotent: once %s, twice %s", a, b)
		}
	})
}
