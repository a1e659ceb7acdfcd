package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// benchIterations of a ~200 KB state that changes a little each time: the case
// deltas and compression are for.
const benchIterations = 200

// agentStates returns the states and merge patches of n iterations of an agent's
// loop: notes of prose (400 notes make ~200 KB), three of which change each
// iteration, counters that move, and a log that grows by one event. patches[i]
// turns states[i-1] into states[i] (patches[0] is {}).
func agentStates(n, nNotes int) (states, patches [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`the order refund policy customer shipped tracking warehouse invoice
		payment card declined retry later support ticket escalate manager notes summary plan step tool
		result search lookup found missing address street city postal code weight parcel carrier delay
		apology credit voucher balance account email phone verified pending closed reopened`)
	prose := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	notes := map[string]any{}
	for i := range nNotes {
		notes[fmt.Sprintf("note_%03d", i)] = map[string]any{
			"text": prose(400), "score": rng.IntN(1000), "id": fmt.Sprintf("%016x", rng.Uint64())}
	}
	var log []any
	for i := range nNotes / 20 {
		log = append(log, map[string]any{"at": i, "event": prose(60)})
	}
	state := map[string]any{"schema_version": 1, "notes": notes, "log": log, "stop_reason": "tool_use",
		"counters": map[string]any{"tokens": 0, "tool_calls": 0}}
	for it := range n {
		patch := map[string]any{}
		if it > 0 {
			changed := map[string]any{}
			for range 3 {
				k := fmt.Sprintf("note_%03d", rng.IntN(nNotes))
				note := map[string]any{"score": rng.IntN(1000)}
				if rng.IntN(2) == 0 {
					note["text"] = prose(400)
				}
				changed[k] = model.MergePatch(changed[k], note) // k may come up twice
				notes[k] = model.MergePatch(notes[k], note)
			}
			log = append(log[:len(log):len(log)], map[string]any{"at": it, "event": prose(60)})
			counters := map[string]any{"tokens": 1000 * it, "tool_calls": 3 * it}
			patch = map[string]any{"notes": changed, "log": log, "counters": counters}
			state["log"], state["counters"] = log, counters
		}
		s, _ := json.Marshal(state)
		p, _ := json.Marshal(patch)
		states, patches = append(states, s), append(patches, p)
	}
	return states, patches
}

// storedBytes is what the session's checkpoint rows hold: state text and body.
func storedBytes(tb testing.TB, s *Store, session string) int64 {
	tb.Helper()
	var n int64
	if err := s.rdb.QueryRow(`SELECT COALESCE(SUM(LENGTH(state) + COALESCE(LENGTH(body), 0)), 0) FROM checkpoints WHERE session_id = ?`,
		session).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// writeChain writes the iterations to session via PUT, or via PUT then PATCH.
func writeChain(tb testing.TB, s *Store, session, via string, states, patches [][]byte) {
	tb.Helper()
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: session}); err != nil {
		tb.Fatal(err)
	}
	for i := range states {
		it := int64(i + 1)
		var err error
		if via == "put" || i == 0 {
			_, err = s.PutCheckpoint(ctx, "t", session, model.PutCheckpoint{Iteration: it, State: states[i]}, model.KeepLastN(int64(benchIterations)))
		} else {
			_, err = s.PatchCheckpoint(ctx, "t", session, model.PatchCheckpoint{Iteration: it, StatePatch: patches[i]}, model.KeepLastN(int64(benchIterations)))
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkCheckpointChain writes 200 iterations of a ~200 KB state through PUT
// and through PATCH and reports the bytes stored against 200 whole copies (what
// every row held before deltas), then the cost of reading back the latest, a
// checkpoint at the bottom of a run of deltas, and the latest of a session
// written as before migration 00007 (old rows, read by this code).
//
//	go test ./internal/repo -run '^$' -bench CheckpointChain -benchtime 20x
func BenchmarkCheckpointChain(b *testing.B) {
	states, patches := agentStates(benchIterations, 400)
	var whole int64
	for _, st := range states {
		c, _ := canonicalJSON(st)
		whole += int64(len(c))
	}
	ctx := context.Background()
	for _, via := range []string{"put", "patch"} {
		b.Run("write200/"+via, func(b *testing.B) {
			var stored int64
			for b.Loop() {
				b.StopTimer()
				s := mustOpen(b)
				b.StartTimer()
				writeChain(b, s, "s", via, states, patches)
				b.StopTimer()
				stored = storedBytes(b, s, "s")
				b.StartTimer()
			}
			b.ReportMetric(float64(stored), "stored-B")
			b.ReportMetric(float64(whole), "whole-B")
			b.ReportMetric(float64(whole)/float64(stored), "x-smaller")
		})
	}

	s := mustOpen(b)
	writeChain(b, s, "s", "patch", states, patches)
	// The oldest row of the run under the latest full one below the top: the most
	// patches a read applies.
	var deepest int64
	if err := s.rdb.QueryRow(`SELECT MIN(iteration) FROM checkpoints WHERE session_id = 's' AND kind = 'delta' AND iteration > (
		SELECT MAX(iteration) FROM checkpoints WHERE session_id = 's' AND kind = 'full' AND iteration < ?)`, benchIterations).Scan(&deepest); err != nil {
		b.Fatal(err)
	}
	old := mustOpen(b)
	legacyChain(b, old, "s", states)
	for _, tc := range []struct {
		name      string
		s         *Store
		iteration int64
	}{
		{"read/latest", s, 0},
		{fmt.Sprintf("read/deepest_delta_%d_patches", benchIterations-deepest), s, deepest},
		{"read/latest_old_row", old, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tc.s.GetCheckpoint(ctx, "t", "s", tc.iteration); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// legacyChain stores states as every row was stored before migration 00007:
// whole, as text.
func legacyChain(tb testing.TB, s *Store, session string, states [][]byte) {
	tb.Helper()
	if _, err := s.CreateSession(context.Background(), "t", model.CreateSession{ID: session}); err != nil {
		tb.Fatal(err)
	}
	for i, st := range states {
		c, err := canonicalJSON(st)
		if err != nil {
			tb.Fatal(err)
		}
		it := int64(i + 1)
		if _, err := s.wdb.Exec(`INSERT INTO checkpoints (tenant_id, session_id, iteration, id, state, last_seq, sha256, created_at)
			VALUES ('t', ?, ?, ?, ?, 0, ?, 0)`, session, it, fmt.Sprintf("ckp_old_%d", it), string(c), checkpointHash(it, 0, c)); err != nil {
			tb.Fatal(err)
		}
	}
}
