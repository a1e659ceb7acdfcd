package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// Two processes (two Store handles, two pools) racing on the compare-and-sets
// this package's other race tests do not cover: a status transition that is
// legal from the state both read but not from the one the other left, and a
// compaction whose through_seq must pass the latest one's.
func TestStatusAndCompactionRacesAcrossHandles(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	a, b := mustOpenURL(t, url), mustOpenURL(t, url)
	handles := [2]interface {
		UpdateSession(context.Context, string, string, model.UpdateSession) (model.Session, error)
		CreateCompaction(context.Context, string, string, model.CreateCompaction) (model.CompactionResult, error)
	}{a, b}

	// archived is final: of "archive" and "reopen" racing from completed, either
	// order is legal only if reopen comes first; archived must never be left
	// by a later write.
	for round := range 20 {
		id := "s" + string(rune('a'+round))
		if _, err := a.CreateSession(ctx, "t", model.CreateSession{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.CloseSession(ctx, "t", id); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		results := make([]error, 2)
		for i, to := range []model.Status{model.StatusArchived, model.StatusActive} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, results[i] = handles[i].UpdateSession(ctx, "t", id, model.UpdateSession{Status: model.Optional[model.Status]{Set: true, Value: to}})
			}()
		}
		wg.Wait()
		got, err := b.GetSession(ctx, "t", id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case results[0] != nil:
			t.Fatalf("round %d: archive from %s failed: %v", round, "completed or active", results[0])
		case results[1] == nil && got.Status != model.StatusArchived:
			t.Errorf("round %d: both applied, status %s: reopen must have come first, archive last", round, got.Status)
		case results[1] != nil && model.AsError(results[1]).Code != "invalid_transition":
			t.Errorf("round %d: reopen refused with %v, want invalid_transition", round, results[1])
		}
	}

	// Compactions: of two through the same seq, exactly one is recorded.
	if _, err := a.CreateSession(ctx, "t", model.CreateSession{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	msgs := make([]model.NewMessage, 40)
	for i := range msgs {
		msgs[i] = model.NewMessage{Role: model.RoleUser, Content: model.TextContent("m")}
	}
	if _, err := a.AppendMessages(ctx, "t", "c", model.AppendRequest{Messages: msgs, Batch: true}); err != nil {
		t.Fatal(err)
	}
	for through := int64(2); through <= 40; through += 2 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range handles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = handles[i].CreateCompaction(ctx, "t", "c", model.CreateCompaction{ThroughSeq: through, Summary: model.TextContent("s")})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case model.AsError(err).Code != "validation_failed":
				t.Fatalf("through %d: %v", through, err)
			}
		}
		if won != 1 {
			t.Fatalf("through %d: %d compactions recorded, want exactly 1", through, won)
		}
	}
}
