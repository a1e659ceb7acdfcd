package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// mustReadAll checks that every kept iteration of session reads as the state
// written then, through GetCheckpoint and through the list.
func mustReadAll(t *testing.T, s *Store, session string, states [][]byte, kept []int64) {
	t.Helper()
	ctx := context.Background()
	for _, it := range kept {
		c, err := s.GetCheckpoint(ctx, "t", session, it)
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		if want := mustCanonical(t, states[it-1]); !bytes.Equal(c.State, want) {
			t.Fatalf("iteration %d reads %.60s…, want %.60s…", it, c.State, want)
		}
	}
	pg, err := s.ListCheckpoints(ctx, "t", session, repo.PageRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, c := range pg.Data {
		got = append([]int64{c.Iteration}, got...)
	}
	if !reflect.DeepEqual(got, kept) {
		t.Fatalf("kept iterations %v, want %v", got, kept)
	}
}

func span(lo, hi int64) []int64 {
	var out []int64
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

// Chains run across snapshots, and pruning to a small keep leaves every
// remaining iteration readable, whichever way it was written.
func TestCheckpointChainsAndPruning(t *testing.T) {
	states, patches := agentStates(36, 30)
	s := mustOpen(t) // one store, a session per case
	for _, tc := range []struct {
		name string
		via  string
		keep int
	}{
		// TestPatchReadsAsPut reads whole chains, through every path.
		{"patch_keep_3", "patch", 3},
		{"put_keep_3", "put", 3},
		{"patch_keep_17", "patch", 17}, // the oldest kept one sits inside a run of deltas
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			id := tc.name
			mustCkSession(t, s, "t", id)
			for i := range states {
				it := int64(i + 1)
				var err error
				if tc.via == "put" || i == 0 {
					_, err = s.PutCheckpoint(ctx, "t", id, model.PutCheckpoint{Iteration: it, State: states[i]}, model.KeepLastN(int64(tc.keep)))
				} else {
					_, err = s.PatchCheckpoint(ctx, "t", id, model.PatchCheckpoint{Iteration: it, StatePatch: patches[i]}, model.KeepLastN(int64(tc.keep)))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			mustReadAll(t, s, id, states, span(int64(len(states)-min(tc.keep, len(states))+1), int64(len(states))))
		})
	}
}

// No run of deltas is longer than snapshotEvery-1, so no read applies more
// patches than that.
func TestSnapshotEvery(t *testing.T) {
	states, patches := agentStates(2*snapshotEvery+5, 30)
	s := mustOpen(t)
	writeChain(t, s, "s", "patch", states, patches)
	kinds := chainKinds(t, s, "s")
	for _, run := range strings.Split(kinds, "F") {
		if len(run) >= snapshotEvery {
			t.Fatalf("a run of %d deltas in %s", len(run), kinds)
		}
	}
	if strings.Count(kinds, "D") < 3*snapshotEvery/2 {
		t.Errorf("kinds %s: want mostly deltas for states that change this little", kinds)
	}
}

// A damaged row is corrupted on every read that needs it, naming the row the
// damage is in; the rest of the chain reads on.
func TestCorruptedDelta(t *testing.T) {
	states, patches := agentStates(6, 30)
	ctx := context.Background()
	other, _ := json.Marshal(map[string]any{"x": 1})
	zOther, _ := encodeBody(bytes.Repeat(other, 200))
	s := mustOpen(t) // one store, a session per case
	for _, tc := range []struct {
		name   string
		at     int64  // the row damaged
		set    string // SQL assignments
		args   []any
		named  int64 // the row a read of `read` names
		read   int64
		intact []int64
	}{
		{"delta_body_garbage", 3, `body = x'00ff00ff'`, nil, 3, 3, []int64{4, 5, 6}},
		{"delta_body_other_patch", 3, `body = ?, codec = ''`, []any{[]byte(`{"notes":null}`)}, 3, 3, []int64{4, 5, 6}},
		{"delta_body_not_an_object", 3, `body = ?, codec = ''`, []any{[]byte(`[1]`)}, 3, 3, []int64{4, 5, 6}},
		{"delta_base_gone", 3, `base_iteration = 99`, nil, 3, 3, []int64{4, 5, 6}},
		{"delta_base_loops", 3, `base_iteration = 3`, nil, 3, 3, []int64{4, 5, 6}},
		{"full_snapshot_under_a_delta", 6, `body = ?`, []any{zOther}, 6, 2, nil},
		{"delta_above_a_delta", 4, `body = x'1234'`, nil, 4, 2, []int64{5, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ses := tc.name
			writeChain(t, s, ses, "patch", states, patches)
			if got := chainKinds(t, s, ses); got != "DDDDDF" {
				t.Fatalf("kinds %s, want DDDDDF", got)
			}
			s.mustExec(t, `UPDATE checkpoints SET `+tc.set+` WHERE session_id = '`+ses+`' AND iteration = `+itoa(tc.at), tc.args...)
			var id string
			if err := s.rdb.QueryRow(`SELECT id FROM checkpoints WHERE session_id = ? AND iteration = ?`, ses, tc.named).Scan(&id); err != nil {
				t.Fatal(err)
			}
			for name, read := range map[string]func() error{
				"get":    func() error { _, err := s.GetCheckpoint(ctx, "t", ses, tc.read); return err },
				"list":   func() error { _, err := s.ListCheckpoints(ctx, "t", ses, repo.PageRequest{Limit: 100}); return err },
				"export": func() error { return s.ExportSession(ctx, "t", ses, &bytes.Buffer{}) },
			} {
				if e := model.AsError(read()); e.Code != "corrupted" || e.Extra["id"] != id {
					t.Errorf("%s: %v, want corrupted naming %s (iteration %d)", name, e, id, tc.named)
				}
			}
			for _, it := range tc.intact {
				c, err := s.GetCheckpoint(ctx, "t", ses, it)
				if err != nil || !bytes.Equal(c.State, mustCanonical(t, states[it-1])) {
					t.Errorf("iteration %d: %v", it, err)
				}
			}
		})
	}
}

func TestCompressionThreshold(t *testing.T) {
	random := make([]byte, 4<<10)
	rand.Read(random)
	for _, tc := range []struct {
		name  string
		in    []byte
		codec string
	}{
		{"short_stays_plain", bytes.Repeat([]byte("a"), compressAbove-1), ""},
		{"at_threshold_compresses", bytes.Repeat([]byte("a"), compressAbove), codecZstd},
		{"incompressible_stays_plain", random, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			codec, body := encodeBody(tc.in)
			if codec != tc.codec {
				t.Fatalf("codec %q, want %q", codec, tc.codec)
			}
			back, err := decodeBody(codec, body)
			if err != nil || !bytes.Equal(back, tc.in) {
				t.Fatalf("round trip: %v", err)
			}
		})
	}

	// Through the store: a small state is kept as before, in the state column; a
	// large one compressed in body.
	ctx := context.Background()
	s := mustOpen(t)
	mustCkSession(t, s, "t", "s")
	small := `{"note":"` + strings.Repeat("a", 100) + `"}`
	large := `{"note":"` + strings.Repeat("ab", compressAbove) + `"}`
	for i, st := range []string{small, large} {
		it := int64(i + 1)
		mustCheckpoint(t, s, "s", it, st)
		var text string
		var codec string
		var body []byte
		if err := s.rdb.QueryRow(`SELECT state, codec, body FROM checkpoints WHERE iteration = ?`, it).Scan(&text, &codec, &body); err != nil {
			t.Fatal(err)
		}
		if wantZ := st == large; (codec == codecZstd) != wantZ || (text == st) == wantZ || (body != nil) != wantZ {
			t.Errorf("iteration %d: state %d bytes, codec %q, body %d bytes; want compressed %v", it, len(text), codec, len(body), wantZ)
		}
		if c, err := s.GetCheckpoint(ctx, "t", "s", it); err != nil || string(c.State) != st {
			t.Errorf("iteration %d reads %.40s (%v)", it, c.State, err)
		}
	}
}

// Rows written before migration 00007 (state as text, no kind, codec or body)
// read as they did, and take part in chains once new ones arrive.
func TestOldRowsStillRead(t *testing.T) {
	states, patches := agentStates(8, 30)
	ctx := context.Background()
	s := mustOpen(t)
	mustCkSession(t, s, "t", "s")
	for i, st := range states[:5] {
		c := mustCanonical(t, st)
		it := int64(i + 1)
		id := fmt.Sprintf("ckp_old_%d", it)
		s.mustExec(t, `INSERT INTO checkpoints (tenant_id, session_id, iteration, id, client_id, state, last_seq, sha256, created_at)
			VALUES ('t', 's', ?, ?, ?, ?, 0, ?, 1)`, it, id, id, string(c), checkpointHash(it, 0, c))
	}
	mustReadAll(t, s, "s", states, span(1, 5))
	var buf bytes.Buffer
	if err := s.ExportSession(ctx, "t", "s", &buf); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Resume(ctx, "t", "s"); err != nil || r.Checkpoint.Iteration != 5 || !r.Validation.OK {
		t.Fatalf("resume: %v %+v", err, r.Validation)
	}
	for i := 5; i < 8; i++ {
		if _, err := patchCheckpoint(s, "t", "s", int64(i+1), nil, string(patches[i])); err != nil {
			t.Fatal(err)
		}
	}
	if got := chainKinds(t, s, "s"); got != "FFFFDDDF" {
		t.Errorf("kinds %s, want the old latest and the new ones but the last as deltas", got)
	}
	mustReadAll(t, s, "s", states, span(1, 8))
}

// A rewind deletes the checkpoints written after a seq; the ones left read as
// before, the newest whole.
func TestDeleteCheckpointsAfterSeq(t *testing.T) {
	states, _ := agentStates(10, 30)
	ctx := context.Background()
	s := mustOpen(t) // one store, a session per case
	for _, tc := range []struct {
		name string
		seq  int64
		move []int64 // iterations whose last_seq is moved past seq first
		gone []int64
	}{
		{"newest_go", 6, nil, []int64{7, 8, 9, 10}},
		{"none_go", 10, nil, nil},
		{"all_go", 0, nil, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		// Not what a rewind makes, but the chain must survive it: rows out of the
		// middle go, and the deltas leaning on them are rewritten whole.
		{"middle_go", 100, []int64{2, 4, 5, 8}, []int64{2, 4, 5, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ses := tc.name
			mustCkSession(t, s, "t", ses)
			for i, st := range states {
				// as if a message came before each iteration
				s.mustExec(t, `UPDATE sessions SET last_seq = ? WHERE tenant_id = 't' AND id = ?`, i+1, ses)
				if _, err := s.PutCheckpoint(ctx, "t", ses, model.PutCheckpoint{Iteration: int64(i + 1), State: st}, model.CheckpointRetention{}); err != nil {
					t.Fatal(err)
				}
			}
			if !strings.Contains(chainKinds(t, s, ses), "DD") {
				t.Fatalf("kinds %s: the test wants deltas to strand", chainKinds(t, s, ses))
			}
			for _, it := range tc.move {
				c, err := s.GetCheckpoint(ctx, "t", ses, it)
				if err != nil {
					t.Fatal(err)
				}
				s.mustExec(t, `UPDATE checkpoints SET last_seq = 200, sha256 = ? WHERE session_id = ? AND iteration = ?`,
					checkpointHash(it, 200, c.State), ses, it)
			}
			var gone []int64
			err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				var err error
				gone, err = deleteCheckpointsAfterSeq(ctx, tx, "t", ses, tc.seq)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gone, tc.gone) {
				t.Errorf("deleted %v, want %v", gone, tc.gone)
			}
			var kept []int64
			for it := int64(1); it <= 10; it++ {
				if !slicesContains(tc.gone, it) {
					kept = append(kept, it)
				}
			}
			if kinds := chainKinds(t, s, ses); len(kept) > 0 && !strings.HasSuffix(kinds, "F") {
				t.Errorf("kinds %s: the newest left must be whole", kinds)
			}
			for _, it := range kept {
				c, err := s.GetCheckpoint(ctx, "t", ses, it)
				if err != nil || !bytes.Equal(c.State, mustCanonical(t, states[it-1])) {
					t.Errorf("iteration %d: %v", it, err)
				}
			}
		})
	}
}

func slicesContains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestMergeDiff(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		ok             bool
	}{
		{"equal", `{"a":1}`, `{"a":1}`, true},
		{"change_and_remove", `{"a":1,"b":2}`, `{"a":3}`, true},
		{"nested", `{"a":{"b":{"c":1,"d":2}}}`, `{"a":{"b":{"c":1,"d":3},"e":4}}`, true},
		{"object_replaces_scalar", `{"a":1}`, `{"a":{"b":2}}`, true},
		{"scalar_replaces_object", `{"a":{"b":2}}`, `{"a":1}`, true},
		{"arrays_whole_nulls_and_all", `{"a":[1,2]}`, `{"a":[1,null,{"b":null}]}`, true},
		{"unchanged_null_stays", `{"a":null,"b":1}`, `{"a":null,"b":2}`, true},
		{"set_null", `{"a":1}`, `{"a":null}`, false},
		{"add_null", `{}`, `{"a":null}`, false},
		{"null_inside_new_object", `{"a":1}`, `{"a":{"b":null}}`, false},
		{"null_inside_nested_change", `{"a":{"b":1}}`, `{"a":{"b":null}}`, false},
		{"numbers_kept_exact", `{"a":1.0}`, `{"a":1.00,"b":12345678901234567890}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, _ := decodeTree([]byte(tc.from))
			to, _ := decodeTree([]byte(tc.to))
			p, ok := mergeDiff(from.(map[string]any), to.(map[string]any))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (patch %v)", ok, tc.ok, p)
			}
			if ok && !reflect.DeepEqual(model.MergePatch(from, p), to) {
				t.Errorf("patch %v turns %s into %v, not %s", p, tc.from, model.MergePatch(from, p), tc.to)
			}
		})
	}
}

// An import stores its checkpoints as a PUT would (deltas under a full latest)
// and exports byte for byte what it was given.
func TestImportStoresDeltas(t *testing.T) {
	states, patches := agentStates(12, 30)
	ctx := context.Background()
	s := mustOpen(t)
	writeChain(t, s, "s", "patch", states, patches)
	var first bytes.Buffer
	if err := s.ExportSession(ctx, "t", "s", &first); err != nil {
		t.Fatal(err)
	}
	other := mustOpen(t)
	if _, err := other.ImportSession(ctx, "t", bytes.NewReader(first.Bytes()), model.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := chainKinds(t, other, "s"), chainKinds(t, s, "s"); got != want {
		t.Errorf("imported kinds %s, written %s", got, want)
	}
	var again bytes.Buffer
	if err := other.ExportSession(ctx, "t", "s", &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Error("export → import → export changed the bytes")
	}
	mustReadAll(t, other, "s", states, span(1, 12))
}

// Migrations 00024 and 00007 roll back over rows the older code can read,
// and refuse a database holding rows it could not.
func TestCheckpointMigrationDown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		state     string
		namespace string
		refuse    string // what the refusal names; "" for none
	}{
		{"plain_rows_roll_back", `{"a":1}`, "", ""},
		{"compressed_rows_refuse", `{"a":"` + strings.Repeat("ab", compressAbove) + `"}`, "", "need migration 00007"},
		{"namespaced_rows_refuse", `{"a":1}`, "sub", "need migration 00024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := t.TempDir() + "/l.db"
			s, err := Open(ctx, Config{Path: path, Migrate: true})
			if err != nil {
				t.Fatal(err)
			}
			mustCkSession(t, s, "t", "s")
			if _, err := s.PutCheckpoint(ctx, "t", "s", model.PutCheckpoint{Iteration: 1, State: model.JSON(tc.state), Namespace: tc.namespace},
				model.CheckpointRetention{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", dsn(path, false, "FULL"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			p, err := provider(db)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.DownTo(ctx, 6)
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("down: %v, want a refusal: %s", err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var state string
			if err := db.QueryRow(`SELECT state FROM checkpoints`).Scan(&state); err != nil || state != tc.state {
				t.Errorf("after down: %q (%v), want %s", state, err, tc.state)
			}
		})
	}
}
