package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// expiryStore is what TestPurgeExpiredMatchSQLite calls, on top of frpStore.
type expiryStore interface {
	frpStore
	UpdateSession(ctx context.Context, tenant, id string, in model.UpdateSession) (model.Session, error)
	CreateAgent(ctx context.Context, tenant string, in model.CreateAgent) (model.Agent, error)
	CreatePassage(ctx context.Context, tenant, agentID string, in model.CreatePassage) (model.Passage, error)
	ListPassages(ctx context.Context, tenant, agentID string, p repo.PageRequest) (model.Page[model.Passage], error)
}

// TestPurgeExpiredMatchSQLite: sessions and passages past their expires_at are
// hidden from reads and swept by a purge with Expired, alike on both backends;
// a fork that shares an expired parent's prefix takes it over and survives.
func TestPurgeExpiredMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	past, future := model.Time(1500), model.Time(4102444800000) // 2100-01-01
	var last *sesMsgTranscript
	runSesMsgScript(t, p, func(st0 sesMsgStore, tr *sesMsgTranscript) {
		last = tr
		st := st0.(expiryStore)
		add := func(step string, v any, err error) { frpAdd(tr, step, v, err) }
		// Appends come before the expiry: an expired session takes none.
		mk := func(id string, msgs int, exp *model.Time) {
			_, err := st.CreateSession(ctx, "t", model.CreateSession{ID: id})
			for i := 0; err == nil && i < msgs; i++ {
				_, err = st.AppendMessages(ctx, "t", id, sesMsgBatch(sesMsgUser(id)))
			}
			if err == nil && exp != nil {
				_, err = st.UpdateSession(ctx, "t", id, model.UpdateSession{ExpiresAt: model.Optional[model.Time]{Set: true, Value: *exp}})
			}
			add("make "+id, nil, err)
		}
		mk("gone", 2, &past)
		mk("kept", 1, &future)
		mk("plain", 1, nil)
		mk("parent", 3, nil)
		f, err := st.ForkSession(ctx, "t", "parent", model.ForkSession{ID: "fork", AtSeq: sesMsgPtr(int64(2))})
		add("fork", f, err)
		u, err := st.UpdateSession(ctx, "t", "parent", model.UpdateSession{ExpiresAt: model.Optional[model.Time]{Set: true, Value: past}})
		add("expire parent", u, err)
		_, err = st.PutCheckpoint(ctx, "t", "kept", model.PutCheckpoint{Iteration: 1, State: model.JSON(`{}`)}, model.CheckpointRetention{})
		add("checkpoint", nil, err)
		_, err = st.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"})
		add("agent", nil, err)
		for i, exp := range []*model.Time{&past, &future, nil, &past} {
			_, err := st.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "note", ExpiresAt: exp})
			add("passage", i, err)
		}

		_, err = st.GetSession(ctx, "t", "gone")
		add("get expired", nil, err)
		_, err = st.UpdateSession(ctx, "t", "gone", model.UpdateSession{Title: model.Optional[string]{Set: true, Value: "x"}})
		add("update expired", nil, err)
		list, err := st.ListSessions(ctx, "t", model.SessionFilter{}, repo.PageRequest{Limit: model.MaxLimit})
		add("list hides expired", list, err)
		ps, err := st.ListPassages(ctx, "t", "a", repo.PageRequest{Limit: model.MaxLimit})
		add("passages hide expired", len(ps.Data), err)

		req := model.PurgeRequest{Expired: true, DryRun: true}.WithCutoff(model.Now())
		res, err := st.PurgeSessions(ctx, "t", req)
		add("dry run", res, err)
		res, err = st.PurgeSessions(ctx, "u", req)
		add("dry run in another tenant", res, err)
		req.DryRun = false
		res, err = st.PurgeSessions(ctx, "t", req)
		add("purge", res, err)
		res, err = st.PurgeSessions(ctx, "t", req)
		add("purge again", res, err)
		p.exec(t, st, `UPDATE sessions SET expires_at = NULL WHERE tenant_id = 't'`)
		list, err = st.ListSessions(ctx, "t", model.SessionFilter{}, repo.PageRequest{Limit: model.MaxLimit})
		add("what is left", list, err)
		frpHistory(ctx, st, tr, "the expired parent's fork", "fork")
	})
	// Both backends agree; check what they agree on.
	got := strings.Join(last.lines, "\n")
	for _, want := range []string{
		`get expired`, `not_found`,
		`"sessions":2,"messages":5,"checkpoints":0,"passages":2`, // gone and parent (the fork copies its prefix first)
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %s:\n%s", want, got)
		}
	}
	if testing.Verbose() {
		t.Log(got)
	}
}
