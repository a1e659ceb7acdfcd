package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// memTwoProcesses opens two stores on one database, as two Logbook processes
// would, with agent a of tenant t.
func memTwoProcesses(t *testing.T) ([2]*postgres.Store, string) {
	t.Helper()
	url := mustDatabase(t)
	st := [2]*postgres.Store{memOpenURL(t, url), memOpenURL(t, url)}
	if _, err := st[0].CreateAgent(context.Background(), "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	return st, url
}

// 50 appends from two processes to a label that does not exist yet: one
// block, holding all 50 pieces, at version 50, with 50 versions of history.
func TestMemoryConcurrentAppendsMakeOneBlock(t *testing.T) {
	ctx := context.Background()
	st, _ := memTwoProcesses(t)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st[i%2].AppendBlock(ctx, "t", "a", "notes", fmt.Sprintf("piece-%02d", i), repo.EditByAPI); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	blocks, err := st[0].ListBlocks(ctx, "t", "a")
	if err != nil || len(blocks) != 1 {
		t.Fatalf("%d blocks (%v), want 1", len(blocks), err)
	}
	b := blocks[0]
	for i := range 50 {
		if !strings.Contains(b.Value, fmt.Sprintf("piece-%02d", i)) {
			t.Errorf("piece-%02d lost", i)
		}
	}
	if n := strings.Count(b.Value, "\n"); n != 49 || b.Version != 50 {
		t.Errorf("%d lines, version %d; want 50 lines, version 50", n+1, b.Version)
	}
	hist, err := st[1].BlockHistory(ctx, "t", "a", "notes", repo.PageRequest{Limit: 200})
	if err != nil || len(hist.Data) != 50 || hist.Data[0].Version != 50 || hist.Data[49].Version != 1 {
		t.Errorf("history: %d versions (%v)", len(hist.Data), err)
	}
}

// Two processes write one block with the same If-Match, or both create it:
// exactly one of the two wins each time, and the other is told why.
func TestMemoryConflictingBlockWrites(t *testing.T) {
	ctx := context.Background()
	st, _ := memTwoProcesses(t)
	race := func(write func(p int) (model.Block, bool, error)) (res [2]model.Block, created [2]bool, errs [2]error) {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for p := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res[p], created[p], errs[p] = write(p)
			}()
		}
		close(start)
		wg.Wait()
		return res, created, errs
	}
	for round := range 20 {
		label := fmt.Sprintf("b%d", round)
		// Both create it (no If-Match): one creates, the other replaces.
		res, created, errs := race(func(p int) (model.Block, bool, error) {
			return st[p].PutBlock(ctx, "t", "a", label, model.PutBlock{Value: fmt.Sprint("create by ", p)}, nil)
		})
		if errs[0] != nil || errs[1] != nil || created[0] == created[1] || res[0].Version+res[1].Version != 3 || res[0].ID != res[1].ID {
			t.Fatalf("round %d, create: created %v, versions %d %d, ids %s %s, errors %v",
				round, created, res[0].Version, res[1].Version, res[0].ID, res[1].ID, errs)
		}
		// Both replace version 2: one wins, the other is 412.
		v := int64(2)
		res, _, errs = race(func(p int) (model.Block, bool, error) {
			return st[p].PutBlock(ctx, "t", "a", label, model.PutBlock{Value: fmt.Sprint("update by ", p)}, &v)
		})
		won := 0
		for p := range 2 {
			switch e := model.AsError(errs[p]); {
			case errs[p] == nil:
				won++
				if res[p].Version != 3 || res[p].Value != fmt.Sprint("update by ", p) {
					t.Errorf("round %d: the winner wrote %+v", round, res[p])
				}
			case e.Kind == model.KindPrecondition && e.Code == "precondition_failed" &&
				e.Msg == fmt.Sprintf("block %q is at version 3, not the one If-Match names; read it again and retry", label):
			default:
				t.Errorf("round %d: %v", round, errs[p])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d writes with If-Match 2 won, want 1", round, won)
		}
		cur, err := st[0].GetBlock(ctx, "t", "a", label)
		hist, herr := st[1].BlockHistory(ctx, "t", "a", label, repo.PageRequest{})
		if err != nil || herr != nil || cur.Version != 3 || len(hist.Data) != 3 || hist.Data[0].Value != cur.Value {
			t.Fatalf("round %d: block %+v (%v), %d versions of history (%v)", round, cur, err, len(hist.Data), herr)
		}
	}
}

// An agent deleted by one process while another writes its memory: each write
// either lands before the delete (and is deleted with the agent) or finds
// the agent gone; nothing of the agent is left behind.
func TestMemoryDeleteAgentRacesWrites(t *testing.T) {
	ctx := context.Background()
	for round := range 10 {
		st, url := memTwoProcesses(t)
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 20 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := st[1].AppendBlock(ctx, "t", "a", fmt.Sprint("l", i%3), "x", repo.EditByAPI)
				errs <- err
			}()
			go func() {
				defer wg.Done()
				_, err := st[1].CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "x"})
				errs <- err
			}()
		}
		if err := st[0].DeleteAgent(ctx, "t", "a"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !model.IsNotFound(err, "agent") {
				t.Errorf("round %d: %v", round, err)
			}
		}
		if n := memCountRows(t, url, `SELECT (SELECT count(*) FROM blocks) + (SELECT count(*) FROM block_history)
			+ (SELECT count(*) FROM passages) + (SELECT count(*) FROM agents)`); n != 0 {
			t.Fatalf("round %d: %d rows of the deleted agent left", round, n)
		}
	}
}

// DeleteAgent takes the agent's blocks, their history and its passages, and
// only its; sessions keep their agent_id.
func TestMemoryDeleteAgentRemovesItsMemory(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	st := memOpenURL(t, url)
	for _, id := range []string{"a", "b"} {
		if _, err := st.CreateAgent(ctx, "t", model.CreateAgent{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendBlock(ctx, "t", id, "human", "x", repo.EditByAPI); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreatePassage(ctx, "t", id, model.CreatePassage{Content: "shared words"}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO sessions (tenant_id, id, agent_id, status, created_at, updated_at)
		VALUES ('t', 's', 'a', 'active', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteAgent(ctx, "t", "a"); err != nil {
		t.Fatal(err)
	}
	if n := memCountRows(t, url, `SELECT (SELECT count(*) FROM blocks WHERE agent_id = 'a') + (SELECT count(*) FROM block_history WHERE agent_id = 'a')
		+ (SELECT count(*) FROM passages WHERE agent_id = 'a')`); n != 0 {
		t.Errorf("%d rows of a's memory left", n)
	}
	if hits, err := st.SearchPassages(ctx, "t", "b", model.PassageSearch{Query: "shared", Limit: 10}); err != nil || len(hits) != 1 {
		t.Errorf("b's passage: %d hits (%v)", len(hits), err)
	}
	if n := memCountRows(t, url, `SELECT count(*) FROM sessions WHERE agent_id = 'a'`); n != 1 {
		t.Errorf("the session lost its agent_id")
	}
}

func memCountRows(t *testing.T, url, query string) int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
