package ckstate

import (
	"encoding/json"
	"fmt"

	"github.com/logbook/logbook/internal/model"
)

// Write is a checkpoint write: a whole state (PUT) or a patch of the latest,
// or a graph write (POST), which the server numbers and whose patch applies
// to the parent it names.
type Write struct {
	Namespace string
	Iteration int64 // 0: the next of the namespace (a graph write)
	Expected  *int64
	ClientID  string         // "": the checkpoint's own id
	Graph     bool           // based on Parent, not on the latest
	Parent    *string        // a graph write's parent (nil: none)
	Tree      any            // the state, when given whole
	Pause     *int64         // its pause_until_ms
	Patch     map[string]any // the patch, when given as one
	Metadata  model.Object
	Create    bool // create the session when it does not exist
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
	return Write{Namespace: in.Namespace, Iteration: in.Iteration, Expected: in.ExpectedIteration, ClientID: in.ClientID,
		Tree: tree, Pause: st.PauseUntilMs, Metadata: in.Metadata}, nil
}

// PatchWrite checks a PATCH's patch and makes its Write. Errors: KindInvalid.
func PatchWrite(in model.PatchCheckpoint) (Write, error) {
	patch, err := DecodeTree(in.StatePatch)
	p, ok := patch.(map[string]any)
	if err != nil || !ok {
		return Write{}, model.Invalid(model.FieldError{Field: "state_patch", Message: "must be a JSON object (an RFC 7396 merge patch of the state)"})
	}
	return Write{Namespace: in.Namespace, Iteration: in.Iteration, Expected: in.ExpectedIteration, ClientID: in.ClientID,
		Patch: p, Metadata: in.Metadata}, nil
}

// GraphWrite checks a POST's state or patch and makes its Write. Errors:
// KindInvalid.
func GraphWrite(in model.CreateCheckpoint) (Write, error) {
	w := Write{Namespace: in.Namespace, Expected: in.ExpectedIteration, ClientID: in.ClientID, Graph: true,
		Parent: in.ParentID, Metadata: in.Metadata, Create: in.CreateSession}
	if len(in.StatePatch) > 0 {
		pw, err := PatchWrite(model.PatchCheckpoint{StatePatch: in.StatePatch})
		w.Patch = pw.Patch
		return w, err
	}
	pw, err := PutWrite(model.PutCheckpoint{State: in.State})
	w.Tree, w.Pause = pw.Tree, pw.Pause
	return w, err
}

// Fence is the compare-and-set of a write against the latest iteration (0 for
// none): expected_iteration, when given, must be it, and the iteration must be
// above it. Errors: stale_iteration.
//
// Each namespace has its own latest, so writers of two namespaces never see
// each other's fence. A graph write is numbered latest+1, so only its
// expected_iteration can be stale.
func Fence(w Write, latest int64) error {
	if w.Expected != nil && *w.Expected != latest {
		return model.StaleIteration(fmt.Sprintf("expected_iteration is %d but the latest checkpoint%s is iteration %d: another worker wrote since",
			*w.Expected, inNamespace(w.Namespace), latest), latest)
	}
	if w.Iteration != 0 && w.Iteration <= latest {
		return model.StaleIteration(fmt.Sprintf("iteration %d is not above the latest checkpoint's %d%s", w.Iteration, latest, inNamespace(w.Namespace)), latest)
	}
	return nil
}

// inNamespace names a namespace in a message; the default one goes unnamed,
// so that a loop that knows none reads what it always did.
func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return fmt.Sprintf(" of namespace %q", ns)
}

// Number is the iteration a write takes once the fence has passed.
func (w Write) Number(latest int64) int64 {
	if w.Iteration == 0 {
		return latest + 1
	}
	return w.Iteration
}

// Plan is a write worked out against one base checkpoint (the latest of its
// namespace, or a graph write's parent): the new state, how it is stored,
// and how the base may become a delta. The JSON work
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

// Stale reports a plan made against another base than the one the write
// found, which must be planned again.
func (p Plan) Stale(base int64, baseSHA string) bool {
	return p.Latest.Iteration != base || p.Latest.SHA256 != baseSHA
}

// PlanWrite works out w against latest. Its error is an internal failure;
// what the client must hear after the fence (no_checkpoint, a state too
// large or invalid, a corrupted latest to patch) is in Plan.Err.
func PlanWrite(sessionID string, w Write, latest Latest) (Plan, error) {
	p := Plan{Latest: latest}
	tree := w.Tree
	if w.Patch != nil {
		switch {
		case !latest.Found && w.Graph:
			latest.Tree = map[string]any{} // a root's patch is its whole state
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

// DefaultKeep is how many checkpoints a namespace keeps when neither the
// session nor the server names a policy; older ones are pruned as new ones
// arrive.
const DefaultKeep = model.DefaultCheckpointKeep
