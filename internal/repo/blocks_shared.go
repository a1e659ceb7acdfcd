package repo

import (
	"slices"

	"github.com/logbook/logbook/internal/model"
)

// Attachment is one shared block's appearance under another agent: agent
// At.AgentID sees the block kept as Owner under the label At.Label.
type Attachment struct {
	Owner model.BlockRef
	At    model.BlockRef
}

// OwnerOf is where b is kept: its owner's agent and label when b was read
// through an attachment, else its own.
func OwnerOf(b model.Block) model.BlockRef {
	if b.OwnerAgentID != nil && b.OwnerLabel != nil {
		return model.BlockRef{AgentID: *b.OwnerAgentID, Label: *b.OwnerLabel}
	}
	return model.BlockRef{AgentID: b.AgentID, Label: b.Label}
}

// OwnerAgents lists, once each, the agents that keep blocks: the agents whose
// attachments a backend reads to fill SetSharedWith.
func OwnerAgents(blocks []model.Block) []string {
	var out []string
	for _, b := range blocks {
		if a := OwnerOf(b).AgentID; !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// SetSharedWith gives each block the attachments of the block it is (in the
// order of atts), an empty list when there are none.
func SetSharedWith(blocks []model.Block, atts []Attachment) {
	for i := range blocks {
		owner := OwnerOf(blocks[i])
		blocks[i].SharedWith = []model.BlockRef{}
		for _, a := range atts {
			if a.Owner == owner {
				blocks[i].SharedWith = append(blocks[i].SharedWith, a.At)
			}
		}
	}
}
