package sqlite

import (
	"context"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// attachmentRows counts block_attachments rows, to prove that nothing dangles.
func attachmentRows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM block_attachments`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The attachment rows follow the owner's block: a rename moves them (the
// foreign key cascades), a delete of the block or of either agent removes
// them, and a rename of the attachment touches only its own label.
func TestSharedBlockRowsFollowTheOwner(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		mustAgent(t, s, "t", id)
	}
	if _, err := s.AppendBlock(ctx, "t", "a", "human", "Ann", repo.EditByAPI); err != nil {
		t.Fatal(err)
	}
	attach := func(agent, label, as string) {
		t.Helper()
		if _, err := s.AttachBlock(ctx, "t", agent, model.AttachBlock{AgentID: "a", Label: label, As: as}); err != nil {
			t.Fatal(err)
		}
	}
	attach("b", "human", "user")
	attach("c", "human", "")
	if _, err := s.RenameBlock(ctx, "t", "a", "human", "people", repo.EditByAPI); err != nil {
		t.Fatal(err)
	}
	b, err := s.GetBlock(ctx, "t", "b", "user")
	if err != nil || *b.OwnerLabel != "people" || len(b.SharedWith) != 2 || b.SharedWith[0] != (model.BlockRef{AgentID: "b", Label: "user"}) {
		t.Fatalf("after the owner's rename b sees %+v (%v)", b, err)
	}
	if _, err := s.RenameBlock(ctx, "t", "b", "user", "u", repo.EditByTool); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBlock(ctx, "t", "a", "people"); err != nil {
		t.Errorf("renaming b's attachment moved the owner's block: %v", err)
	}
	if err := s.DeleteAgent(ctx, "t", "c"); err != nil {
		t.Fatal(err)
	}
	if n := attachmentRows(t, s); n != 1 {
		t.Errorf("%d attachment rows after deleting the attaching agent c, want 1", n)
	}
	if err := s.DeleteBlock(ctx, "t", "a", "people"); err != nil {
		t.Fatal(err)
	}
	if n := attachmentRows(t, s); n != 0 {
		t.Errorf("%d attachment rows after deleting the owner's block", n)
	}
	if _, err := s.GetBlock(ctx, "t", "b", "u"); !model.IsNotFound(err, "block") {
		t.Errorf("b's attachment of a deleted block: %v", err)
	}
	if _, err := s.AppendBlock(ctx, "t", "a", "human", "Ann", repo.EditByAPI); err != nil {
		t.Fatal(err)
	}
	attach("b", "human", "")
	if err := s.DeleteAgent(ctx, "t", "a"); err != nil {
		t.Fatal(err)
	}
	if n := attachmentRows(t, s); n != 0 {
		t.Errorf("%d attachment rows after deleting the owner agent", n)
	}
	if blocks, err := s.ListBlocks(ctx, "t", "b"); err != nil || len(blocks) != 0 {
		t.Errorf("b lists %+v (%v)", blocks, err)
	}
}
