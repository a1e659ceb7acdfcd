package transfer

import (
	"encoding/json"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// CheckpointRows works out how an import stores an export's checkpoints, one
// after another oldest first, as a run of PUTs would have stored them: each a
// full row, the one before it then kept as a reverse delta from it when that
// pays (ckstate.ReverseDelta). It does no database work, so that both
// backends store the same rows, which their exports then read back alike.
type CheckpointRows struct {
	prev  ckstate.Latest // the checkpoint just stored, of namespace ns
	ns    string
	pause *int64
}

// Next canonicalises c.State in place (the hash covers the canonical form) and
// returns the full row to store for c, and how to keep the checkpoint before
// it, once c is stored (nil: as it is). Parse has checked c, so an error here
// is internal.
//
// An export from before namespaces names no client id and no metadata: the
// checkpoint is then named by its id, and its metadata is {}.
func (cr *CheckpointRows) Next(c *model.Checkpoint) (ckstate.Stored, *ckstate.Delta, error) {
	if c.ClientID == "" {
		c.ClientID = c.ID
	}
	if len(c.Metadata) == 0 {
		c.Metadata = model.Object("{}")
	}
	if c.Namespace != cr.ns {
		cr.prev, cr.ns = ckstate.Latest{}, c.Namespace
	}
	st, err := model.ParseState(c.State)
	if err != nil {
		return ckstate.Stored{}, nil, model.Internal(err)
	}
	tree, err := ckstate.DecodeTree(c.State)
	if err != nil {
		return ckstate.Stored{}, nil, model.Internal(err)
	}
	if c.State, err = json.Marshal(tree); err != nil {
		return ckstate.Stored{}, nil, model.Internal(err)
	}
	if c.Namespace == "" {
		cr.pause = st.PauseUntilMs
	}
	stored := ckstate.EncodeFull(c.State)
	delta := ckstate.ReverseDelta(tree, cr.prev)
	cr.prev = ckstate.Latest{Found: true, Iteration: c.Iteration, SHA256: c.SHA256, Stored: stored.Size(), Size: len(c.State), Tree: tree}
	return stored, delta, nil
}

// PauseUntil is the newest checkpoint's pause, which the session row keeps
// (nil: none, or no checkpoint).
func (cr *CheckpointRows) PauseUntil() *int64 { return cr.pause }
