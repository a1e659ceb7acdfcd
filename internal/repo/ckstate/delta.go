package ckstate

import (
	"encoding/json"
	"reflect"

	"github.com/logbook/logbook/internal/model"
)

// When a checkpoint arrives, the one before it (the latest so far, always full)
// may be rewritten as a reverse delta: the merge patch that turns the new state
// back into its own. The latest stays whole, so the read that matters, the one
// a resuming worker makes, costs what it did before deltas. Chains run
// downwards, from a full row to the older deltas under it, so pruning the
// oldest never strands a delta.
const (
	// SnapshotEvery bounds a run of deltas: at most SnapshotEvery-1 in a row,
	// so any read applies at most 15 patches to the full row above it.
	SnapshotEvery = 16

	// DeltaAbove: a state shorter than this is kept whole. Its delta would save
	// a few hundred bytes and cost every older read a walk.
	DeltaAbove = 1 << 10
)

// Latest is a session's latest checkpoint as a write found it.
type Latest struct {
	Found     bool
	Iteration int64
	SHA256    string
	Stored    int // bytes its row takes
	Size      int // length of its canonical state
	Tree      any // its decoded state, when it was read
	Err       error
}

// Delta is a checkpoint row that may be rewritten as a delta: the patch from
// the next checkpoint's state back to its own.
type Delta struct {
	Iteration int64
	SHA256    string // the row as the patch was computed against
	Codec     string
	Body      []byte
	Full      int // bytes the row takes whole
}

// Fits reports whether d may join the run of deltas under the new latest, a
// run that holds runRows rows of runBytes bytes so far: the run must stay
// under SnapshotEvery rows, and its bytes within what d's row takes whole;
// otherwise d stays a snapshot and a new run starts under it.
func (d *Delta) Fits(runRows, runBytes int64) bool {
	return runRows+1 < SnapshotEvery && runBytes+int64(len(d.Body)) <= int64(d.Full)
}

// ReverseDelta works out how base can be kept as a delta from next, the state
// written after it: nil when RFC 7396 cannot express the way back, or when the
// patch would not be at most half of what base takes whole.
func ReverseDelta(next any, base Latest) *Delta {
	if base.Tree == nil || base.Size < DeltaAbove {
		return nil
	}
	from, ok1 := next.(map[string]any)
	to, ok2 := base.Tree.(map[string]any)
	if !ok1 || !ok2 {
		return nil
	}
	p, ok := MergeDiff(from, to)
	// The proof is in the applying: anything the diff missed shows here.
	if !ok || !reflect.DeepEqual(model.MergePatch(from, p), base.Tree) {
		return nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	codec, body := EncodeBody(raw)
	if 2*len(body) > base.Stored {
		return nil
	}
	return &Delta{Iteration: base.Iteration, SHA256: base.SHA256, Codec: codec, Body: body, Full: base.Stored}
}

// MergeDiff returns a merge patch p such that MergePatch(from, p) equals to, and
// false when RFC 7396 cannot say it: a merge patch cannot set a value to null
// (null removes a member), and an object it sets is merged onto nothing, which
// drops the object's own null members. Arrays are replaced whole.
func MergeDiff(from, to map[string]any) (map[string]any, bool) {
	p := map[string]any{}
	for k := range from {
		if _, ok := to[k]; !ok {
			p[k] = nil
		}
	}
	for k, tv := range to {
		fv, had := from[k]
		if had && reflect.DeepEqual(fv, tv) { // same map or slice: DeepEqual answers at once
			continue
		}
		switch tv := tv.(type) {
		case nil:
			return nil, false
		case map[string]any:
			if fm, ok := fv.(map[string]any); ok {
				sub, ok := MergeDiff(fm, tv)
				if !ok {
					return nil, false
				}
				p[k] = sub
				continue
			}
			if hasNullMember(tv) {
				return nil, false
			}
		}
		p[k] = tv
	}
	return p, true
}

// hasNullMember reports a null member of m or of an object inside it; arrays
// are values a patch carries as they are.
func hasNullMember(m map[string]any) bool {
	for _, v := range m {
		switch v := v.(type) {
		case nil:
			return true
		case map[string]any:
			if hasNullMember(v) {
				return true
			}
		}
	}
	return false
}
