package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// BenchmarkBlocks is what resolving a label through block_attachments costs:
// reads and appends of an agent's own block and of one attached from another
// agent, and the list of an agent with five blocks, one of them attached.
func BenchmarkBlocks(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Config{Path: filepath.Join(b.TempDir(), "l.db"), Migrate: true, NoMessageIndex: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"a", "b"} {
		mustAgent(b, s, "t", id)
	}
	for i := range 4 {
		if _, _, err := s.PutBlock(ctx, "t", "a", fmt.Sprintf("own%d", i), model.PutBlock{Value: "some text", Limit: model.MaxBlockLimit}, nil); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, err := s.PutBlock(ctx, "t", "b", "human", model.PutBlock{Value: "Name: Ann", Limit: model.MaxBlockLimit}, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := s.AttachBlock(ctx, "t", "a", model.AttachBlock{AgentID: "b", Label: "human"}); err != nil {
		b.Fatal(err)
	}
	for _, label := range []string{"own0", "human"} {
		b.Run("get/"+label, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.GetBlock(ctx, "t", "a", label); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("append/"+label, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.AppendBlock(ctx, "t", "a", label, "x", repo.EditByAPI); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.ListBlocks(ctx, "t", "a"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
