package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/ckstore"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// ckEnv is a store on a fresh database and a pool on it for what the store
// does not do: make sessions, look at rows, damage them.
type ckEnv struct {
	st  *postgres.Store
	db  *pgxpool.Pool
	url string
}

func ckOpen(t *testing.T) ckEnv {
	t.Helper()
	url := mustDatabase(t)
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return ckEnv{st: st, db: db, url: url}
}

func (e ckEnv) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := e.db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// session makes a session row by hand: these tests are of checkpoints only.
func (e ckEnv) session(t *testing.T, tenant, id string) {
	t.Helper()
	e.exec(t, `INSERT INTO sessions (tenant_id, id, status, created_at, updated_at) VALUES ($1, $2, 'active', 1, 1)`, tenant, id)
}

// kinds is the session's rows oldest first: F for full, D for delta.
func (e ckEnv) kinds(t *testing.T, session string) string {
	t.Helper()
	var k string
	if err := e.db.QueryRow(context.Background(), `SELECT COALESCE(string_agg(upper(left(kind, 1)), '' ORDER BY iteration), '')
		FROM checkpoints WHERE session_id = $1`, session).Scan(&k); err != nil {
		t.Fatal(err)
	}
	return k
}

func (e ckEnv) put(t *testing.T, session string, it int64, state string) model.Checkpoint {
	t.Helper()
	c, err := e.st.PutCheckpoint(context.Background(), "t", session, model.PutCheckpoint{Iteration: it, State: model.JSON(state)}, model.CheckpointRetention{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e ckEnv) patch(tenant, session string, it int64, expected *int64, patch string) (model.Checkpoint, error) {
	return e.st.PatchCheckpoint(context.Background(), tenant, session,
		model.PatchCheckpoint{Iteration: it, StatePatch: model.JSON(patch), ExpectedIteration: expected}, model.CheckpointRetention{})
}

// writeChain writes states as iterations 1…, the first by PUT, the rest by
// PUT or PATCH (via), keeping keep.
func (e ckEnv) writeChain(t *testing.T, session, via string, states, patches [][]byte, keep int) {
	t.Helper()
	ctx := context.Background()
	e.session(t, "t", session)
	for i := range states {
		it := int64(i + 1)
		var err error
		if via == "put" || i == 0 {
			_, err = e.st.PutCheckpoint(ctx, "t", session, model.PutCheckpoint{Iteration: it, State: states[i]}, model.KeepLastN(int64(keep)))
		} else {
			_, err = e.st.PatchCheckpoint(ctx, "t", session, model.PatchCheckpoint{Iteration: it, StatePatch: patches[i]}, model.KeepLastN(int64(keep)))
		}
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
	}
}

// mustReadAll checks that exactly the kept iterations are there, each reading
// as the state written then with its SHA-256, through GetCheckpoint and
// through the list walked in small pages.
func (e ckEnv) mustReadAll(t *testing.T, session string, states [][]byte, kept []int64) {
	t.Helper()
	ctx := context.Background()
	check := func(how string, c model.Checkpoint) {
		t.Helper()
		want, _ := ckstate.Canonical(states[c.Iteration-1])
		if !bytes.Equal(c.State, want) || c.SHA256 != ckstate.Hash(c.Iteration, 0, want) || c.SessionID != session {
			t.Fatalf("%s iteration %d reads %.60s… sha %s, want %.60s…", how, c.Iteration, c.State, c.SHA256, want)
		}
	}
	for _, it := range kept {
		c, err := e.st.GetCheckpoint(ctx, "t", session, it)
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		check("get", c)
	}
	var got []int64
	for p := (repo.PageRequest{Limit: 7}); ; {
		pg, err := e.st.ListCheckpoints(ctx, "t", session, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pg.Data {
			check("list", c)
			got = append([]int64{c.Iteration}, got...)
		}
		if !pg.HasMore {
			break
		}
		p.Cursor = *pg.NextCursor
	}
	if !reflect.DeepEqual(got, kept) {
		t.Fatalf("kept iterations %v, want %v", got, kept)
	}
}

func ckSpan(lo, hi int64) []int64 {
	var out []int64
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

// ckStates makes n states of an agent whose notes change a little each
// iteration (large enough for deltas, random enough not to compress away),
// and the merge patch from each to the next.
func ckStates(n int) (states, patches [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	notes := map[string]any{}
	for i := range 30 {
		notes[fmt.Sprintf("note_%02d", i)] = map[string]any{"text": fmt.Sprintf("%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64()),
			"score": rng.IntN(1000)}
	}
	state := map[string]any{"schema_version": 1, "notes": notes, "stop_reason": "tool_use", "step": 0}
	for it := range n {
		patch := map[string]any{}
		if it > 0 {
			k := fmt.Sprintf("note_%02d", rng.IntN(30))
			v := map[string]any{"text": fmt.Sprintf("%016x", rng.Uint64()), "score": rng.IntN(1000)}
			notes[k] = v
			state["step"] = it
			patch = map[string]any{"notes": map[string]any{k: v}, "step": it}
			if it%5 == 0 { // now and then a member goes
				delete(notes, k)
				patch["notes"] = map[string]any{k: nil}
			}
		}
		s, _ := json.Marshal(state)
		p, _ := json.Marshal(patch)
		states, patches = append(states, s), append(patches, p)
	}
	return states, patches
}

func TestCheckpointFencePG(t *testing.T) {
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
	e := ckOpen(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.name
			e.session(t, "t", id)
			if tc.setup != "" {
				e.put(t, id, 1, tc.setup)
			}
			session, tenant := id, "t"
			if tc.session != "" {
				session = tc.session
			}
			if tc.tenant != "" {
				tenant = tc.tenant
			}
			c, err := e.patch(tenant, session, tc.it, tc.expected, tc.patch)
			if tc.code != "" {
				me := model.AsError(err)
				if me.Code != tc.code {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
				if tc.field != "" && (len(me.Fields) != 1 || me.Fields[0].Field != tc.field) {
					t.Errorf("fields %+v, want one naming %s", me.Fields, tc.field)
				}
				if tc.code == "stale_iteration" && me.Extra["latest_iteration"] != tc.latest {
					t.Errorf("latest_iteration = %v, want %d", me.Extra["latest_iteration"], tc.latest)
				}
				if got, _ := e.st.GetCheckpoint(ctx, "t", id, 0); got.Iteration > 1 {
					t.Errorf("a refused patch wrote iteration %d", got.Iteration)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(c.State) != tc.want || c.Iteration != tc.it || c.SHA256 != ckstate.Hash(tc.it, 0, []byte(tc.want)) {
				t.Errorf("got %s iteration %d sha %s, want %s", c.State, c.Iteration, c.SHA256, tc.want)
			}
			got, err := e.st.GetCheckpoint(ctx, "t", id, 0)
			if err != nil || got.ID != c.ID || string(got.State) != tc.want || got.SHA256 != c.SHA256 || got.CreatedAt != c.CreatedAt {
				t.Errorf("latest %+v (%v), want what PATCH answered %+v", got, err, c)
			}
		})
	}
	// PUT's own refusals, and reads of what is not there.
	e.session(t, "t", "put")
	for _, st := range []string{`[1]`, `null`, `{"pause_until_ms":"soon"}`} {
		_, err := e.st.PutCheckpoint(ctx, "t", "put", model.PutCheckpoint{Iteration: 1, State: model.JSON(st)}, model.CheckpointRetention{})
		if e := model.AsError(err); e.Code != "validation_failed" || len(e.Fields) != 1 || !strings.HasPrefix(e.Fields[0].Field, "state") {
			t.Errorf("PUT %s: %v", st, err)
		}
	}
	for _, tc := range []struct {
		session string
		it      int64
		msg     string
	}{
		{"put", 0, `checkpoint "latest" not found`},
		{"put", 3, `checkpoint "iteration 3" not found`},
		{"nope", 0, `session "nope" not found`},
	} {
		_, err := e.st.GetCheckpoint(ctx, "t", tc.session, tc.it)
		if e := model.AsError(err); e.Kind != model.KindNotFound || e.Msg != tc.msg {
			t.Errorf("get %s %d: %v, want %s", tc.session, tc.it, err, tc.msg)
		}
	}
	if _, err := e.st.ListCheckpoints(ctx, "t", "nope", repo.PageRequest{}); !model.IsNotFound(err, "session") {
		t.Errorf("list of a missing session: %v", err)
	}
	if pg, err := e.st.ListCheckpoints(ctx, "t", "put", repo.PageRequest{}); err != nil || len(pg.Data) != 0 || pg.Data == nil || pg.HasMore {
		t.Errorf("list of none: %+v %v", pg, err)
	}
}

// A PATCH moves pause_until like a PUT, and cannot grow a state past its limit;
// a checkpoint records the session's last_seq when it was written.
func TestCheckpointPauseAndLastSeqPG(t *testing.T) {
	ctx := context.Background()
	e := ckOpen(t)
	e.session(t, "t", "s")
	e.put(t, "s", 1, `{"pause_until_ms":5}`)
	pause := func() *int64 {
		var p *int64
		if err := e.db.QueryRow(ctx, `SELECT pause_until FROM sessions WHERE id = 's'`).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := pause(); p == nil || *p != 5 {
		t.Errorf("pause_until %v after PUT, want 5", p)
	}
	if _, err := e.patch("t", "s", 2, nil, `{"pause_until_ms":99}`); err != nil {
		t.Fatal(err)
	}
	if p := pause(); p == nil || *p != 99 {
		t.Errorf("pause_until %v, want 99", p)
	}
	e.exec(t, `UPDATE sessions SET last_seq = 12 WHERE id = 's'`)
	c, err := e.patch("t", "s", 3, nil, `{"pause_until_ms":null}`)
	if err != nil {
		t.Fatal(err)
	}
	if p := pause(); p != nil {
		t.Errorf("pause_until %v, want none", *p)
	}
	if c.LastSeq != 12 || c.SHA256 != ckstate.Hash(3, 12, []byte(`{}`)) {
		t.Errorf("last_seq %d sha %s, want 12 and its hash", c.LastSeq, c.SHA256)
	}
	big := fmt.Sprintf(`{"blob":%q}`, strings.Repeat("x", model.MaxStateBytes))
	_, err = e.patch("t", "s", 4, nil, big)
	if me := model.AsError(err); me.Code != "validation_failed" || len(me.Fields) != 1 || me.Fields[0].Field != "state_patch" {
		t.Errorf("err = %v, want validation_failed naming state_patch", err)
	}
	if c, _ := e.st.GetCheckpoint(ctx, "t", "s", 0); c.Iteration != 3 || c.LastSeq != 12 {
		t.Errorf("latest is %d (last_seq %d), want 3 (12)", c.Iteration, c.LastSeq)
	}
}

// Chains run across snapshots, and pruning to a small keep leaves every
// remaining iteration readable, whichever way it was written; a PATCH-written
// chain is stored as a PUT-written one.
func TestCheckpointChainsAndPruningPG(t *testing.T) {
	states, patches := ckStates(36)
	e := ckOpen(t)
	for _, tc := range []struct {
		name string
		via  string
		keep int
	}{
		{"patch_keep_3", "patch", 3},
		{"put_keep_3", "put", 3},
		{"patch_keep_17", "patch", 17}, // the oldest kept one sits inside a run of deltas
		{"put_keep_all", "put", 0},
		{"patch_keep_all", "patch", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.writeChain(t, tc.name, tc.via, states, patches, tc.keep)
			n := int64(len(states))
			keep := int64(tc.keep)
			if keep == 0 {
				keep = n
			}
			e.mustReadAll(t, tc.name, states, ckSpan(n-keep+1, n))
			kinds := e.kinds(t, tc.name)
			if !strings.HasSuffix(kinds, "F") || (keep > 3 && !strings.Contains(kinds, "D")) {
				t.Errorf("kinds %s: want deltas under a full latest", kinds)
			}
			for _, run := range strings.Split(kinds, "F") {
				if len(run) >= ckstate.SnapshotEvery {
					t.Errorf("a run of %d deltas in %s", len(run), kinds)
				}
			}
		})
	}
	if put, patch := e.kinds(t, "put_keep_all"), e.kinds(t, "patch_keep_all"); put != patch || strings.Count(put, "F") < 2 {
		t.Errorf("PUT stored %s, PATCH %s: want the same, with a snapshot among the deltas", put, patch)
	}
}

// A small state is kept in the state column as text; a large one compressed
// in body; both read back as written.
func TestCheckpointCompressionPG(t *testing.T) {
	ctx := context.Background()
	e := ckOpen(t)
	e.session(t, "t", "s")
	small := `{"note":"` + strings.Repeat("a", 100) + `"}`
	large := `{"note":"` + strings.Repeat("ab", ckstate.CompressAbove) + `"}`
	for i, st := range []string{small, large} {
		it := int64(i + 1)
		e.put(t, "s", it, st)
		var text, codec string
		var body []byte
		if err := e.db.QueryRow(ctx, `SELECT state, codec, body FROM checkpoints WHERE iteration = $1`, it).Scan(&text, &codec, &body); err != nil {
			t.Fatal(err)
		}
		if wantZ := st == large; (codec == ckstate.CodecZstd) != wantZ || (text == st) == wantZ || (body != nil) != wantZ {
			t.Errorf("iteration %d: state %d bytes, codec %q, body %d bytes; want compressed %v", it, len(text), codec, len(body), wantZ)
		}
		if c, err := e.st.GetCheckpoint(ctx, "t", "s", it); err != nil || string(c.State) != st {
			t.Errorf("iteration %d reads %.40s (%v)", it, c.State, err)
		}
	}
}

// A damaged row is corrupted on every read that needs it, naming the row the
// damage is in; the rest of the chain reads on. A damaged latest cannot be
// patched, and does not stop a PUT.
func TestCheckpointCorruptedPG(t *testing.T) {
	states, patches := ckStates(6)
	ctx := context.Background()
	e := ckOpen(t)
	for _, tc := range []struct {
		name   string
		at     int64  // the row damaged
		set    string // SQL assignments
		named  int64  // the row a read of `read` names
		read   int64
		intact []int64
	}{
		{"delta_body_garbage", 3, `body = '\x00ff00ff'::bytea`, 3, 3, []int64{4, 5, 6}},
		{"delta_base_gone", 3, `base_iteration = 99`, 3, 3, []int64{4, 5, 6}},
		{"delta_above_a_delta", 4, `body = '\x1234'::bytea`, 4, 2, []int64{5, 6}},
		{"full_latest", 6, `state = '{"x":1}', body = NULL, codec = ''`, 6, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ses := tc.name
			e.writeChain(t, ses, "patch", states, patches, 0)
			if got := e.kinds(t, ses); got != "DDDDDF" {
				t.Fatalf("kinds %s, want DDDDDF", got)
			}
			e.exec(t, `UPDATE checkpoints SET `+tc.set+` WHERE session_id = $1 AND iteration = $2`, ses, tc.at)
			var id string
			if err := e.db.QueryRow(ctx, `SELECT id FROM checkpoints WHERE session_id = $1 AND iteration = $2`, ses, tc.named).Scan(&id); err != nil {
				t.Fatal(err)
			}
			for name, read := range map[string]func() error{
				"get":  func() error { _, err := e.st.GetCheckpoint(ctx, "t", ses, tc.read); return err },
				"list": func() error { _, err := e.st.ListCheckpoints(ctx, "t", ses, repo.PageRequest{Limit: 100}); return err },
			} {
				if me := model.AsError(read()); me.Code != "corrupted" || me.Extra["id"] != id {
					t.Errorf("%s: %v, want corrupted naming %s (iteration %d)", name, me, id, tc.named)
				}
			}
			for _, it := range tc.intact {
				c, err := e.st.GetCheckpoint(ctx, "t", ses, it)
				if want, _ := ckstate.Canonical(states[it-1]); err != nil || !bytes.Equal(c.State, want) {
					t.Errorf("iteration %d: %v", it, err)
				}
			}
			if tc.at != 6 {
				return
			}
			if _, err := e.patch("t", ses, 7, nil, `{"b":1}`); model.AsError(err).Code != "corrupted" || model.AsError(err).Extra["id"] != id {
				t.Fatalf("patch over a damaged latest: %v, want corrupted naming %s", err, id)
			}
			e.put(t, ses, 7, `{"b":1}`)
			if _, err := e.st.GetCheckpoint(ctx, "t", ses, 6); model.AsError(err).Code != "corrupted" {
				t.Errorf("iteration 6 after a PUT over it: %v, want still corrupted", err)
			}
		})
	}
}

// Pages walk newest first; a cursor is bound to its session.
func TestCheckpointPagingPG(t *testing.T) {
	ctx := context.Background()
	e := ckOpen(t)
	e.session(t, "t", "a")
	e.session(t, "t", "b")
	for it := int64(1); it <= 5; it++ {
		e.put(t, "a", it, fmt.Sprintf(`{"i":%d}`, it))
	}
	e.put(t, "b", 1, `{}`)
	pg, err := e.st.ListCheckpoints(ctx, "t", "a", repo.PageRequest{Limit: 2})
	if err != nil || len(pg.Data) != 2 || !pg.HasMore || pg.Data[0].Iteration != 5 || pg.Data[1].Iteration != 4 {
		t.Fatalf("first page %+v %v", pg, err)
	}
	want := repo.EncodeCursor(repo.Cursor{Q: ckstore.Fingerprint(model.CheckpointFilter{SessionID: "a"}),
		N: int64(pg.Data[1].CreatedAt), S: pg.Data[1].ID})
	if *pg.NextCursor != *want {
		t.Errorf("cursor %s, want %s (the one SQLite makes)", *pg.NextCursor, *want)
	}
	_, err = e.st.ListCheckpoints(ctx, "t", "b", repo.PageRequest{Limit: 2, Cursor: *pg.NextCursor})
	if me := model.AsError(err); me.Code != "invalid_cursor" || me.Kind != model.KindBadRequest {
		t.Errorf("another session's cursor: %v", err)
	}
	last, err := e.st.ListCheckpoints(ctx, "t", "a", repo.PageRequest{Limit: 3, Cursor: *pg.NextCursor})
	if err != nil || len(last.Data) != 3 || last.HasMore || last.NextCursor != nil || last.Data[2].Iteration != 1 {
		t.Errorf("last page %+v %v", last, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
