package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Two processes append 50 times each to one shared block, one through its
// owner, one through the attaching agent: every piece is kept, and the
// version counts all 100 appends.
func TestMemorySharedBlockAppendsFromTwoProcesses(t *testing.T) {
	ctx := context.Background()
	st, _ := memTwoProcesses(t)
	if _, err := st[0].CreateAgent(ctx, "t", model.CreateAgent{ID: "b", Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st[0].PutBlock(ctx, "t", "a", "log", model.PutBlock{Value: "start", Limit: 100000}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st[1].AttachBlock(ctx, "t", "b", model.AttachBlock{AgentID: "a", Label: "log", As: "shared"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p, at := range [][2]string{{"a", "log"}, {"b", "shared"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := st[p].AppendBlock(ctx, "t", at[0], at[1], fmt.Sprintf("%s-%d", at[0], i), repo.EditByAPI); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, err := st[0].GetBlock(ctx, "t", "b", "shared")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.Value, "\n")
	if b.Version != 101 || len(lines) != 101 {
		t.Fatalf("version %d with %d lines, want 101 of each", b.Version, len(lines))
	}
	for _, who := range []string{"a", "b"} {
		for i := range 50 {
			if !slices.Contains(lines, fmt.Sprintf("%s-%d", who, i)) {
				t.Errorf("lost %s-%d", who, i)
			}
		}
	}
}

// An attach and a block write that both claim a label of agent b, from two
// processes at once: b ends with one of them under the label, never both.
// And appends through an attachment racing the owner's delete of the block
// either reach the shared block before it goes or, after, make b's own.
func TestMemorySharedBlockRaces(t *testing.T) {
	ctx := context.Background()
	st, _ := memTwoProcesses(t)
	if _, err := st[0].CreateAgent(ctx, "t", model.CreateAgent{ID: "b", Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st[0].PutBlock(ctx, "t", "a", "human", model.PutBlock{Value: "Ann"}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		label := fmt.Sprintf("x%d", i)
		var (
			wg        sync.WaitGroup
			attachErr error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, attachErr = st[0].AttachBlock(ctx, "t", "b", model.AttachBlock{AgentID: "a", Label: "human", As: label})
		}()
		go func() {
			defer wg.Done()
			if _, _, err := st[1].PutBlock(ctx, "t", "b", label, model.PutBlock{Value: "b's"}, nil); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		b, err := st[0].GetBlock(ctx, "t", "b", label)
		switch {
		case err != nil:
			t.Fatal(err)
		case attachErr == nil && b.OwnerAgentID == nil:
			t.Errorf("%s: attached, yet b has a block of its own there", label)
		case attachErr != nil && model.AsError(attachErr).Code != "block_exists":
			t.Errorf("%s: attach: %v", label, attachErr)
		case attachErr == nil:
			// The put wrote through the attachment, to a's block: detach for the next round.
			if err := st[0].DetachBlock(ctx, "t", "b", label); err != nil {
				t.Fatal(err)
			}
		}
	}

	if _, err := st[0].AttachBlock(ctx, "t", "b", model.AttachBlock{AgentID: "a", Label: "human", As: "h"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 20 {
			if _, err := st[1].AppendBlock(ctx, "t", "b", "h", fmt.Sprint(i), repo.EditByAPI); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		if err := st[0].DeleteBlock(ctx, "t", "a", "human"); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	if _, err := st[0].GetBlock(ctx, "t", "a", "human"); !model.IsNotFound(err, "block") {
		t.Errorf("a's block after its delete: %v", err)
	}
	if b, err := st[0].GetBlock(ctx, "t", "b", "h"); err == nil && (b.OwnerAgentID != nil || !strings.HasSuffix(b.Value, "19")) {
		t.Errorf("b's label after the race: %+v", b)
	}
}
