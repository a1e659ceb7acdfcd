package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// ckSecondStore is another handle on e's database, as a second Logbook process
// would hold: it shares nothing with e.st but the database.
func ckSecondStore(t *testing.T, e ckEnv) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{URL: e.url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Two processes' workers race to write each next iteration, fenced on the one
// before: exactly one wins each, every other gets stale_iteration naming a
// latest at least the one it expected, and the chain reads back whole.
func TestCheckpointFenceAcrossStoresPG(t *testing.T) {
	const last = 40
	ctx := context.Background()
	e := ckOpen(t)
	e.session(t, "t", "s")
	stores := []*postgres.Store{e.st, ckSecondStore(t, e)}
	// Large enough for deltas, and random so that it does not compress away;
	// the same in every state, so that a delta is small.
	rng := rand.New(rand.NewPCG(3, 4))
	var pad strings.Builder
	for pad.Len() < 2*ckstate.DeltaAbove {
		fmt.Fprintf(&pad, "%016x", rng.Uint64())
	}
	var (
		mu    sync.Mutex
		wins  = map[int64]int{}
		state = map[int64][]byte{}
		wg    sync.WaitGroup
	)
	for p, st := range stores {
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var n int64
					c, err := st.GetCheckpoint(ctx, "t", "s", 0)
					switch {
					case err == nil:
						n = c.Iteration
					case !model.IsNotFound(err, "checkpoint"):
						t.Error(err)
						return
					}
					if n >= last {
						return
					}
					body := fmt.Sprintf(`{"by":"%d/%d","it":%d,"pad":"%s"}`, p, g, n+1, pad.String())
					_, err = st.PutCheckpoint(ctx, "t", "s", model.PutCheckpoint{Iteration: n + 1, State: model.JSON(body), ExpectedIteration: &n}, model.CheckpointRetention{})
					if me := model.AsError(err); err != nil {
						if got, _ := me.Extra["latest_iteration"].(int64); me.Code != "stale_iteration" || got < n {
							t.Errorf("writing %d over %d: %v (%v)", n+1, n, err, me.Extra)
							return
						}
						continue
					}
					mu.Lock()
					wins[n+1]++
					state[n+1] = []byte(body)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	states := make([][]byte, last)
	for it := int64(1); it <= last; it++ {
		if wins[it] != 1 {
			t.Errorf("iteration %d won by %d writers, want 1", it, wins[it])
		}
		states[it-1] = state[it]
	}
	if t.Failed() {
		return
	}
	e.mustReadAll(t, "s", states, ckSpan(1, last))
	if kinds := e.kinds(t, "s"); !strings.Contains(kinds, "D") || !strings.HasSuffix(kinds, "F") {
		t.Errorf("kinds %s: want deltas under a full latest", kinds)
	}
}

// Patches without expected_iteration from two processes: each one that wins
// applies to the latest as it finds it under the lock, so the final state
// holds every winner's change.
func TestConcurrentPatchesStackPG(t *testing.T) {
	ctx := context.Background()
	e := ckOpen(t)
	e.session(t, "t", "s")
	pad := strings.Repeat("x", 2*ckstate.DeltaAbove)
	e.put(t, "s", 1, `{"pad":"`+pad+`"}`)
	stores := []*postgres.Store{e.st, ckSecondStore(t, e)}
	const n = 24
	var (
		mu  sync.Mutex
		won []int
		wg  sync.WaitGroup
	)
	for i := 2; i < 2+n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := stores[i%2].PatchCheckpoint(ctx, "t", "s", model.PatchCheckpoint{Iteration: int64(i),
				StatePatch: model.JSON(fmt.Sprintf(`{"k%02d":%d}`, i, i))}, model.CheckpointRetention{})
			switch {
			case err == nil:
				mu.Lock()
				won = append(won, i)
				mu.Unlock()
			case model.AsError(err).Code != "stale_iteration":
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	want := map[string]any{"pad": pad}
	for _, i := range won {
		want[fmt.Sprintf("k%02d", i)] = i
	}
	wantJSON, _ := ckstate.Canonical(mustJSON(t, want))
	c, err := e.st.GetCheckpoint(ctx, "t", "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.State) != string(wantJSON) {
		t.Errorf("latest %.80s…, want every winner's key: %v", c.State, won)
	}
}
