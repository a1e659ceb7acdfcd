package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

func mustCkSession(t *testing.T, s *Store, tenant, id string) {
	t.Helper()
	if _, err := s.CreateSession(context.Background(), tenant, model.CreateSession{ID: id}); err != nil {
		t.Fatal(err)
	}
}

func patchCheckpoint(s *Store, tenant, session string, it int64, expected *int64, patch string) (model.Checkpoint, error) {
	return s.PatchCheckpoint(context.Background(), tenant, session,
		model.PatchCheckpoint{Iteration: it, StatePatch: model.JSON(patch), ExpectedIteration: expected}, model.CheckpointRetention{})
}

func mustCanonical(t testing.TB, raw []byte) []byte {
	t.Helper()
	c, err := canonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPatchCheckpointFence(t *testing.T) {
	ctx := context.Background()
	i := func(n int64) *int64 { return &n }
	cases := []struct {
		name     string
		setup    string // the state PUT as iteration 1 first; "" for none
		session  string
		tenant   string
		it       int64
		expected *int64
		patch    string
		code     string // "" for success
		field    string // the field a 422 names
		latest   int64  // stale_iteration's latest_iteration
		want     string // the merged state on success
	}{
		{name: "merges_into_latest", setup: `{"a":1,"b":{"c":2,"d":3}}`, it: 2, expected: i(1),
			patch: `{"a":null,"b":{"c":9},"e":[1,null]}`, want: `{"b":{"c":9,"d":3},"e":[1,null]}`},
		{name: "expected_iteration_is_optional", setup: `{"a":1}`, it: 7, patch: `{"a":2}`, want: `{"a":2}`},
		{name: "iteration_not_above_latest_is_stale", setup: `{}`, it: 1, patch: `{}`, code: "stale_iteration", latest: 1},
		{name: "expected_iteration_not_latest_is_stale", setup: `{}`, it: 2, expected: i(0), patch: `{}`, code: "stale_iteration", latest: 1},
		{name: "no_checkpoint_yet", it: 1, patch: `{"a":1}`, code: "no_checkpoint"},
		{name: "no_checkpoint_yet_expected_zero", it: 1, expected: i(0), patch: `{"a":1}`, code: "no_checkpoint"},
		{name: "no_checkpoint_yet_expected_other_is_stale", it: 4, expected: i(3), patch: `{"a":1}`, code: "stale_iteration", latest: 0},
		{name: "unknown_session_is_404", setup: `{}`, session: "nope", it: 2, patch: `{}`, code: "not_found"},
		{name: "other_tenants_session_is_404", setup: `{}`, tenant: "u", it: 2, patch: `{}`, code: "not_found"},
		{name: "patch_not_an_object", setup: `{}`, it: 2, patch: `[1]`, code: "validation_failed", field: "state_patch"},
		{name: "patch_null", setup: `{}`, it: 2, patch: `null`, code: "validation_failed", field: "state_patch"},
		{name: "patch_makes_state_invalid", setup: `{}`, it: 2, patch: `{"pause_until_ms":"soon"}`,
			code: "validation_failed", field: "state_patch.pause_until_ms"},
		{name: "patch_makes_pending_call_invalid", setup: `{"pending_tool_calls":[{"id":"c","tool_name":"f"}]}`, it: 2,
			patch: `{"pending_tool_calls":[{"id":"c"}]}`, code: "validation_failed", field: "state_patch.pending_tool_calls[0].tool_name"},
		{name: "stale_wins_over_invalid", setup: `{}`, it: 1, patch: `{"pause_until_ms":"soon"}`, code: "stale_iteration", latest: 1},
	}
	s := mustOpen(t) // one store, a session per case: opening one costs more than a case
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.name
			mustCkSession(t, s, "t", id)
			if tc.setup != "" {
				mustCheckpoint(t, s, id, 1, tc.setup)
			}
			session, tenant := cmpOr(tc.session, id), cmpOr(tc.tenant, "t")
			c, err := patchCheckpoint(s, tenant, session, tc.it, tc.expected, tc.patch)
			if tc.code != "" {
				e := model.AsError(err)
				if e.Code != tc.code {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
				if tc.field != "" && (len(e.Fields) != 1 || e.Fields[0].Field != tc.field) {
					t.Errorf("fields %+v, want one naming %s", e.Fields, tc.field)
				}
				if tc.code == "stale_iteration" && e.Extra["latest_iteration"] != tc.latest {
					t.Errorf("latest_iteration = %v, want %d", e.Extra["latest_iteration"], tc.latest)
				}
				if got, _ := s.GetCheckpoint(ctx, "t", id, 0); got.Iteration > 1 {
					t.Errorf("a refused patch wrote iteration %d", got.Iteration)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(c.State) != tc.want || c.Iteration != tc.it || c.SHA256 != checkpointHash(tc.it, 0, []byte(tc.want)) {
				t.Errorf("got %s iteration %d sha %s, want %s", c.State, c.Iteration, c.SHA256, tc.want)
			}
			got, err := s.GetCheckpoint(ctx, "t", id, 0)
			if err != nil || got.ID != c.ID || string(got.State) != tc.want || got.SHA256 != c.SHA256 {
				t.Errorf("latest %+v (%v), want what PATCH answered %+v", got, err, c)
			}
		})
	}
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// A PATCH moves pause_until like a PUT, and cannot grow a state past its limit.
func TestPatchCheckpointPauseAndLimit(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	mustCkSession(t, s, "t", "s")
	mustCheckpoint(t, s, "s", 1, `{"pause_until_ms":5}`)
	pause := func() *int64 {
		var p *int64
		if err := s.rdb.QueryRow(`SELECT pause_until FROM sessions WHERE id = 's'`).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := patchCheckpoint(s, "t", "s", 2, nil, `{"pause_until_ms":99}`); err != nil {
		t.Fatal(err)
	}
	if p := pause(); p == nil || *p != 99 {
		t.Errorf("pause_until %v, want 99", p)
	}
	if _, err := patchCheckpoint(s, "t", "s", 3, nil, `{"pause_until_ms":null}`); err != nil {
		t.Fatal(err)
	}
	if p := pause(); p != nil {
		t.Errorf("pause_until %v, want none", *p)
	}
	big := fmt.Sprintf(`{"blob":%q}`, strings.Repeat("x", model.MaxStateBytes))
	_, err := patchCheckpoint(s, "t", "s", 4, nil, big)
	if e := model.AsError(err); e.Code != "validation_failed" || len(e.Fields) != 1 || e.Fields[0].Field != "state_patch" {
		t.Errorf("err = %v, want validation_failed naming state_patch", err)
	}
	if c, _ := s.GetCheckpoint(ctx, "t", "s", 0); c.Iteration != 3 {
		t.Errorf("latest is %d, want 3", c.Iteration)
	}
}

// checkpointViews renders what every read path says of a session's
// checkpoints: latest, each by iteration, the list (small pages), resume and
// export. Ids and times differ between sessions; the rest must not.
func checkpointViews(t *testing.T, s *Store, session string) []string {
	t.Helper()
	ctx := context.Background()
	show := func(path string, c model.Checkpoint) string {
		return fmt.Sprintf("%s %d %d %s %s", path, c.Iteration, c.LastSeq, c.SHA256, c.State)
	}
	var out []string
	latest, err := s.GetCheckpoint(ctx, "t", session, 0)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, show("latest", latest))
	var list []model.Checkpoint
	for p := (repo.PageRequest{Limit: 7}); ; {
		pg, err := s.ListCheckpoints(ctx, "t", session, p)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, pg.Data...)
		if !pg.HasMore {
			break
		}
		p.Cursor = *pg.NextCursor
	}
	for _, c := range list {
		out = append(out, show("list", c))
		one, err := s.GetCheckpoint(ctx, "t", session, c.Iteration)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, show("get", one))
	}
	r, err := s.Resume(ctx, "t", session)
	if err != nil || r.Checkpoint == nil {
		t.Fatalf("resume: %v %+v", err, r)
	}
	out = append(out, show("resume", *r.Checkpoint))
	var buf bytes.Buffer
	if err := s.ExportSession(ctx, "t", session, &buf); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, MaxImportLine)
	for sc.Scan() {
		var l model.ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Checkpoint != nil {
			out = append(out, show("export", *l.Checkpoint))
		}
	}
	return out
}

// A PATCH-written chain is a PUT-written one on every read: same states, same
// hashes, in every path, and each is the state the client meant.
func TestPatchReadsAsPut(t *testing.T) {
	states, patches := agentStates(34, 30) // a snapshot, two runs of deltas, and the latest
	s := mustOpen(t)
	writeChain(t, s, "put", "put", states, patches)
	writeChain(t, s, "patch", "patch", states, patches)
	put, patch := checkpointViews(t, s, "put"), checkpointViews(t, s, "patch")
	if strings.Join(put, "\n") != strings.Join(patch, "\n") {
		t.Fatalf("PUT and PATCH read differently:\nput   %.300v\npatch %.300v", put, patch)
	}
	for _, v := range put {
		var path string
		var it, seq int64
		if _, err := fmt.Sscan(v, &path, &it, &seq); err != nil {
			t.Fatal(err)
		}
		want := mustCanonical(t, states[it-1])
		if f := strings.SplitN(v, " ", 5); f[3] != checkpointHash(it, 0, want) || f[4] != string(want) {
			t.Fatalf("%s iteration %d reads %.80s…, want %.80s…", path, it, f[4], want)
		}
	}
	kinds := chainKinds(t, s, "patch")
	if !strings.Contains(kinds, "D") || strings.Count(kinds, "F") < 2 || !strings.HasSuffix(kinds, "F") {
		t.Errorf("kinds oldest first %s: want deltas, a snapshot among them, the latest full", kinds)
	}
	if got := chainKinds(t, s, "put"); got != kinds {
		t.Errorf("PUT stored %s, PATCH %s: the same states should be stored alike", got, kinds)
	}
}

// chainKinds is the session's rows oldest first: F for full, D for delta.
func chainKinds(t *testing.T, s *Store, session string) string {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT kind FROM checkpoints WHERE session_id = ? ORDER BY iteration`, session)
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := collect(rows, func(sc scanner) (string, error) {
		var k string
		err := sc.Scan(&k)
		return strings.ToUpper(k[:1]), err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(kinds, "")
}

// A damaged latest cannot be patched (there is no state to patch), and does not
// stop a PUT, which keeps it as it is.
func TestPatchOverCorruptedLatest(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	mustCkSession(t, s, "t", "s")
	c := mustCheckpoint(t, s, "s", 1, `{"a":1}`)
	s.mustExec(t, `UPDATE checkpoints SET state = '{"a":2}' WHERE id = ?`, c.ID)
	_, err := patchCheckpoint(s, "t", "s", 2, nil, `{"b":1}`)
	if e := model.AsError(err); e.Code != "corrupted" || e.Extra["id"] != c.ID {
		t.Fatalf("patch over a damaged latest: %v, want corrupted naming %s", err, c.ID)
	}
	mustCheckpoint(t, s, "s", 2, `{"b":1}`)
	if _, err := s.GetCheckpoint(ctx, "t", "s", 1); model.AsError(err).Code != "corrupted" {
		t.Errorf("iteration 1 after a PUT over it: %v, want still corrupted", err)
	}
}

// Patches racing without expected_iteration: each one that wins applies to the
// latest as the writer finds it, not as it was when the patch was planned, so
// the final state holds every winner's change.
func TestConcurrentPatchesStack(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	mustCkSession(t, s, "t", "s")
	mustCheckpoint(t, s, "s", 1, `{"pad":"`+strings.Repeat("x", 2*deltaAbove)+`"}`)
	const n = 24
	errs := make(chan error, n)
	won := make(chan int, n)
	for i := 2; i < 2+n; i++ {
		go func() {
			_, err := patchCheckpoint(s, "t", "s", int64(i), nil, fmt.Sprintf(`{"k%02d":%d}`, i, i))
			if err == nil {
				won <- i
			} else if model.AsError(err).Code != "stale_iteration" {
				errs <- err
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(won)
	want := map[string]any{"pad": strings.Repeat("x", 2*deltaAbove)}
	for i := range won {
		want[fmt.Sprintf("k%02d", i)] = json.Number(itoa(int64(i)))
	}
	c, err := s.GetCheckpoint(ctx, "t", "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := decodeTree(c.State)
	if !reflect.DeepEqual(got, any(want)) {
		t.Errorf("latest %s, want every winner's key: %v", c.State, want)
	}
	pg, err := s.ListCheckpoints(ctx, "t", "s", repo.PageRequest{Limit: 100})
	if err != nil || len(pg.Data) != len(want) { // the first one and each winner
		t.Errorf("%d checkpoints (%v), want %d", len(pg.Data), err, len(want))
	}
}

// A patch planned against one latest and written after another is planned
// again inside the writer: it applies to what is there, never to what was.
func TestPatchPlannedAgainstAnOlderLatest(t *testing.T) {
	ctx := context.Background()
	// Both checkpoint writes below hold the writer a while: the second one is
	// the first patch, which the second patch is planned beside.
	f, err := repo.NewFaults(1, repo.FaultRule{Point: repo.PointCheckpointWrite, Kind: repo.FaultLatency, Rate: 1, Latency: 150 * time.Millisecond, Times: 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mustCkSession(t, s, "t", "s")
	big := strings.Repeat("x", 2*deltaAbove)
	mustCheckpoint(t, s, "s", 1, `{"pad":"`+big+`"}`)
	first := make(chan error, 1)
	go func() {
		_, err := patchCheckpoint(s, "t", "s", 2, nil, `{"a":1}`)
		first <- err
	}()
	for len(f.Events()) < 2 { // until the first patch is in the writer, asleep
		time.Sleep(time.Millisecond)
	}
	c, err := patchCheckpoint(s, "t", "s", 3, nil, `{"b":2}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if want := `{"a":1,"b":2,"pad":"` + big + `"}`; string(c.State) != want {
		t.Errorf("iteration 3 is %.40s…, want both patches", c.State)
	}
	if got := chainKinds(t, s, "s"); got != "DDF" {
		t.Errorf("kinds %s, want DDF", got)
	}
}
