package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// TestPurgeExpired: a purge with Expired erases the sessions and deletes the
// passages past their expires_at, in more than one batch, and nothing else.
func TestPurgeExpired(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	past, future := model.Time(1500), model.Time(4102444800000)
	const n = repo.PurgeBatch + 3
	for i := range n {
		id := fmt.Sprintf("exp-%03d", i)
		if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: id}); err != nil {
			t.Fatal(err)
		}
		purgeAppend(t, s, id, "a") // before it expires: an expired session takes no appends
		if _, err := s.UpdateSession(ctx, "t", id, model.UpdateSession{ExpiresAt: model.Optional[model.Time]{Set: true, Value: past}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"kept", "plain"} {
		in := model.CreateSession{ID: id}
		if id == "kept" {
			in.ExpiresAt = &future
		}
		if _, err := s.CreateSession(ctx, "t", in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateSession(ctx, "u", model.CreateSession{ID: "other-tenant", ExpiresAt: &past}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	for i := range passageBatch + 2 {
		exp := &past
		if i%100 == 0 {
			exp = &future
		}
		if _, err := s.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "note", ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}
	const livePassages = (passageBatch + 2 + 99) / 100
	if _, err := s.GetSession(ctx, "t", "exp-000"); model.AsError(err).Kind != model.KindNotFound {
		t.Errorf("expired session read: %v, want not found", err)
	}

	in := model.PurgeRequest{Expired: true, DryRun: true}.WithCutoff(model.Now())
	dry, err := s.PurgeSessions(ctx, "t", in)
	want := model.PurgeResult{DryRun: true, Sessions: n, Messages: n, Passages: passageBatch + 2 - livePassages}
	if err != nil || dry != want {
		t.Fatalf("dry run: %+v, %v; want %+v", dry, err, want)
	}
	in.DryRun = false
	got, err := s.PurgeSessions(ctx, "t", in)
	want.DryRun = false
	if err != nil || got != want {
		t.Fatalf("purge: %+v, %v; want %+v", got, err, want)
	}
	var left, leftOther, leftPassages int64
	_ = s.rdb.QueryRow(`SELECT COUNT(*) FROM sessions WHERE tenant_id = 't'`).Scan(&left)
	_ = s.rdb.QueryRow(`SELECT COUNT(*) FROM sessions WHERE tenant_id = 'u'`).Scan(&leftOther)
	_ = s.rdb.QueryRow(`SELECT COUNT(*) FROM passages`).Scan(&leftPassages)
	if left != 2 || leftOther != 1 || leftPassages != livePassages {
		t.Errorf("left: %d sessions, %d in the other tenant, %d passages", left, leftOther, leftPassages)
	}
	page, err := s.ListPassages(ctx, "t", "a", repo.PageRequest{Limit: model.MaxLimit})
	if err != nil || len(page.Data) != livePassages {
		t.Errorf("passages after: %d, %v", len(page.Data), err)
	}
}
