package ckstate

import (
	"encoding/json"
	"fmt"

	"github.com/logbook/logbook/internal/model"
)

// Write is a checkpoint write: a whole state (PUT) or a patch of the latest.
type Write struct {
	Iteration int64
	Expected  *int64
	Tree      any            // PUT: the state
	Pause     *int64         // PUT: its pause_until_ms
	Patch     map[string]any // PATCH
}

// PutWrite checks a PUT's state and makes its Write. Errors: KindInvalid.
func PutWrite(in model.PutCheckpoint) (Write, error) {
	tree, err := DecodeTree(in.State)
	if _, ok := tree.(map[string]any); err != nil || !ok {
		return Write{}, model.Invalid(model.FieldError{Field: "state", Message: "must be a JSON object"})
	}
	st, err := model.ParseState(in.State)
	if err != nil {
		return Write{}, err
	}
	return Write{Iteration: in.Iteration, Expected: in.ExpectedIteration, Tree: tree, Pause: st.PauseUntilMs}, nil
}

// PatchWrite checks a PATCH's patch and makes its Write. Errors: KindInvalid.
func PatchWrite(in model.PatchCheckpoint) (Write, error) {
	patch, err := DecodeTree(in.StatePatch)
	p, ok := patch.(map[string]any)
	if err != nil || !ok {
		return Write{}, model.Invalid(model.FieldError{Field: "state_patch", Message: "must be a JSON object (an RFC 7396 merge patch of the state)"})
	}
	return Write{Iteration: in.Iteration, Expected: in.ExpectedIteration, Patch: p}, nil
}

// Fence is the compare-and-set of a write against the latest iteration (0 for
// none): expected_iteration, when given, must be it, and the iteration must be
// above it. Errors: stale_iteration.
func Fence(w Write, latest int64) error {
	if w.Expected != nil && *w.Expected != latest {
		return model.StaleIteration(fmt.Sprintf("expected_iteration is %d but the latest checkpoint is iteration %d: another worker wrote since",
			*w.Expected, latest), latest)
	}
	if w.Iteration <= latest {
		return model.StaleIteration(fmt.Sprintf("iteration %d is not above the latest checkpoint's %d", w.Iteration, latest), latest)
	}
	return nil
}

// Plan is a write worked out against one latest checkpoint: the new state,
// how it is stored, and how the latest may become a delta. The JSON work
// happens before the transaction, which only checks that the latest is still
// the one planned against and writes rows.
type Plan struct {
	Latest    Latest
	Canonical []byte
	Pause     *int64
	Stored    Stored
	Delta     *Delta
	Err       error // reported once the fence has passed
}

// Stale reports a plan made against another latest than the one the fence
// found, which must be planned again.
func (p Plan) Stale(latest int64, latestSHA string) bool {
	return p.Latest.Iteration != latest || p.Latest.SHA256 != latestSHA
}

// PlanWrite works out w against latest. Its error is an internal failure;
// what the client must hear after the fence (no_checkpoint, a state too
// large or invalid, a corrupted latest to patch) is in Plan.Err.
func PlanWrite(sessionID string, w Write, latest Latest) (Plan, error) {
	p := Plan{Latest: latest}
	tree := w.Tree
	if w.Patch != nil {
		switch {
		case !latest.Found:
			p.Err = model.NoCheckpoint(sessionID)
			return p, nil
		case latest.Err != nil:
			p.Err = latest.Err
			return p, nil
		}
		tree = model.MergePatch(latest.Tree, w.Patch)
	}
	var err error
	if p.Canonical, err = json.Marshal(tree); err != nil {
		return p, model.Internal(err)
	}
	p.Pause = w.Pause
	if n := len(p.Canonical); w.Patch == nil && n > model.MaxStateBytes {
		p.Err = model.Invalid(model.FieldError{Field: "state", Message: fmt.Sprintf(
			"takes %d bytes as canonical JSON, over the limit of %d (an export line must hold it)", n, model.MaxStateBytes)})
		return p, nil
	}
	if w.Patch != nil {
		if n := len(p.Canonical); n > model.MaxStateBytes && n > latest.Size {
			p.Err = model.Invalid(model.FieldError{Field: "state_patch", Message: fmt.Sprintf(
				"would grow the state to %d bytes, over the limit of %d", n, model.MaxStateBytes)})
			return p, nil
		}
		st, err := model.ParsePatchedState(p.Canonical)
		if err != nil {
			p.Err = err
			return p, nil
		}
		p.Pause = st.PauseUntilMs
	}
	p.Stored = EncodeFull(p.Canonical)
	if latest.Found && latest.Err == nil {
		p.Delta = ReverseDelta(tree, latest)
	}
	return p, nil
}

// DefaultKeep is how many checkpoints a session keeps when a write names no
// number; older ones are pruned as new ones arrive.
const DefaultKeep = 100
