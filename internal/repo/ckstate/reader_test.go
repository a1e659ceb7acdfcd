package ckstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// memChain is a session's checkpoint rows kept as a backend keeps them, in a
// map: what the backends do with SQL, done by hand, to test the parts here.
type memChain struct {
	rows map[int64]Row
	last int64
}

func newMemChain() *memChain { return &memChain{rows: map[int64]Row{}} }

func (m *memChain) fetch(it int64) (Row, error) {
	r, ok := m.rows[it]
	if !ok {
		return r, ErrNoRow
	}
	return r, nil
}

func (m *memChain) write(w Write) (model.Checkpoint, error) {
	var latest Latest
	if row, ok := m.rows[m.last]; ok {
		var err error
		if latest, err = LoadLatest(NewReader(m.fetch), row, w.Patch != nil); err != nil {
			return model.Checkpoint{}, err
		}
	}
	if err := Fence(w, latest.Iteration); err != nil {
		return model.Checkpoint{}, err
	}
	p, err := PlanWrite("s", w, latest)
	if err != nil {
		return model.Checkpoint{}, err
	}
	if p.Err != nil {
		return model.Checkpoint{}, p.Err
	}
	c := model.Checkpoint{ID: fmt.Sprintf("ckp_%d", w.Iteration), SessionID: "s", Iteration: w.Iteration, State: p.Canonical,
		SHA256: Hash(w.Iteration, 0, p.Canonical)}
	row := Row{Checkpoint: c, Kind: KindFull, Codec: p.Stored.Codec, Text: []byte(p.Stored.Text), Body: p.Stored.Body}
	row.State = nil
	m.rows[c.Iteration] = row
	m.last = c.Iteration
	if d := p.Delta; d != nil {
		var n, size int64
		for it := d.Iteration - 1; it > 0; it-- {
			r, ok := m.rows[it]
			if !ok {
				continue
			}
			if r.Kind == KindFull {
				break
			}
			n, size = n+1, size+int64(len(r.Body))
		}
		if r := m.rows[d.Iteration]; d.Fits(n, size) && r.SHA256 == d.SHA256 && r.Kind == KindFull {
			m.rows[d.Iteration] = Row{Checkpoint: r.Checkpoint, Kind: KindDelta, Codec: d.Codec, BaseIteration: c.Iteration, Body: d.Body, Text: []byte{}}
		}
	}
	return c, nil
}

func (m *memChain) kinds() string {
	var b strings.Builder
	for it := int64(1); it <= m.last; it++ {
		if r, ok := m.rows[it]; ok {
			b.WriteString(strings.ToUpper(r.Kind[:1]))
		}
	}
	return b.String()
}

// testStates makes n states of an agent that changes a little each
// iteration, and the merge patch from each to the next.
func testStates(n int) (states, patches [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	notes := map[string]any{}
	for i := range 20 {
		notes[fmt.Sprintf("n%02d", i)] = fmt.Sprintf("%016x%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	state := map[string]any{"notes": notes, "step": 0}
	for it := range n {
		patch := map[string]any{}
		if it > 0 {
			k := fmt.Sprintf("n%02d", rng.IntN(20))
			v := fmt.Sprintf("%016x", rng.Uint64())
			notes[k] = v
			state["step"] = it
			patch = map[string]any{"notes": map[string]any{k: v}, "step": it}
		}
		s, _ := json.Marshal(state)
		p, _ := json.Marshal(patch)
		states, patches = append(states, s), append(patches, p)
	}
	return states, patches
}

func writeMemChain(t *testing.T, states, patches [][]byte) *memChain {
	t.Helper()
	m := newMemChain()
	for i := range states {
		it := int64(i + 1)
		var w Write
		var err error
		if i == 0 {
			w, err = PutWrite(model.PutCheckpoint{Iteration: it, State: states[i]})
		} else {
			w, err = PatchWrite(model.PatchCheckpoint{Iteration: it, StatePatch: patches[i]})
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.write(w); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// Every row of a chain reads back as its state, with its hash, whichever way
// the chain is walked, and no run of deltas reaches SnapshotEvery.
func TestReaderRebuildsChain(t *testing.T) {
	states, patches := testStates(2*SnapshotEvery + 5)
	m := writeMemChain(t, states, patches)
	kinds := m.kinds()
	if !strings.HasSuffix(kinds, "F") || strings.Count(kinds, "D") < SnapshotEvery {
		t.Fatalf("kinds %s: want mostly deltas, the latest full", kinds)
	}
	for _, run := range strings.Split(kinds, "F") {
		if len(run) >= SnapshotEvery {
			t.Fatalf("a run of %d deltas in %s", len(run), kinds)
		}
	}
	check := func(rd *Reader, it int64) {
		t.Helper()
		c, err := rd.Read(m.rows[it])
		want, _ := Canonical(states[it-1])
		if err != nil || !bytes.Equal(c.State, want) || c.SHA256 != Hash(it, 0, want) {
			t.Fatalf("iteration %d: %v, %.60s", it, err, c.State)
		}
	}
	down, up := NewReader(m.fetch), NewReader(m.fetch)
	for it := m.last; it >= 1; it-- {
		check(down, it)
		check(NewReader(m.fetch), it)
	}
	for it := int64(1); it <= m.last; it++ {
		check(up, it)
	}
}

// A damaged row is corrupted on every read that needs it, naming the row the
// damage is in; the rows above it read on.
func TestReaderNamesDamage(t *testing.T) {
	states, patches := testStates(6)
	_, zOther := EncodeBody(bytes.Repeat([]byte(`{"x":1}`), 200))
	for _, tc := range []struct {
		name   string
		at     int64
		damage func(*Row)
		named  int64
		read   int64
		intact []int64
	}{
		{"delta_body_garbage", 3, func(r *Row) { r.Body = []byte{0, 0xff, 0, 0xff} }, 3, 3, []int64{4, 5, 6}},
		{"delta_body_other_patch", 3, func(r *Row) { r.Body, r.Codec = []byte(`{"notes":null}`), "" }, 3, 3, []int64{4, 5, 6}},
		{"delta_body_not_an_object", 3, func(r *Row) { r.Body, r.Codec = []byte(`[1]`), "" }, 3, 3, []int64{4, 5, 6}},
		{"delta_base_gone", 3, func(r *Row) { r.BaseIteration = 99 }, 3, 3, []int64{4, 5, 6}},
		{"delta_base_loops", 3, func(r *Row) { r.BaseIteration = 3 }, 3, 3, []int64{4, 5, 6}},
		{"full_snapshot_under_a_delta", 6, func(r *Row) { r.Body, r.Codec = zOther, CodecZstd }, 6, 2, nil},
		{"delta_above_a_delta", 4, func(r *Row) { r.Body = []byte{0x12, 0x34} }, 4, 2, []int64{5, 6}},
		{"unknown_kind", 5, func(r *Row) { r.Kind = "sparse" }, 5, 5, []int64{6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := writeMemChain(t, states, patches)
			if got := m.kinds(); got != "DDDDDF" {
				t.Fatalf("kinds %s, want DDDDDF", got)
			}
			r := m.rows[tc.at]
			tc.damage(&r)
			m.rows[tc.at] = r
			_, err := NewReader(m.fetch).Read(m.rows[tc.read])
			if e := model.AsError(err); !IsCorrupted(e) || e.Extra["id"] != fmt.Sprintf("ckp_%d", tc.named) {
				t.Errorf("read %d: %v, want corrupted naming ckp_%d", tc.read, e, tc.named)
			}
			for _, it := range tc.intact {
				c, err := NewReader(m.fetch).Read(m.rows[it])
				if want, _ := Canonical(states[it-1]); err != nil || !bytes.Equal(c.State, want) {
					t.Errorf("iteration %d: %v", it, err)
				}
			}
		})
	}
}

// LoadLatest reads a small full latest only when a patch needs its state,
// and leaves damage in Err for the write to decide on.
func TestLoadLatest(t *testing.T) {
	m := newMemChain()
	if _, err := m.write(Write{Iteration: 1, Tree: map[string]any{"a": json.Number("1")}}); err != nil {
		t.Fatal(err)
	}
	row := m.rows[1]
	l, err := LoadLatest(NewReader(m.fetch), row, false)
	if err != nil || !l.Found || l.Tree != nil || l.Iteration != 1 || l.Stored != len(`{"a":1}`) {
		t.Errorf("small, no tree needed: %+v %v", l, err)
	}
	if l, err = LoadLatest(NewReader(m.fetch), row, true); err != nil || l.Tree == nil || l.Size != 7 {
		t.Errorf("tree needed: %+v %v", l, err)
	}
	row.Text = []byte(`{"a":2}`)
	if l, err = LoadLatest(NewReader(m.fetch), row, true); err != nil || !IsCorrupted(l.Err) {
		t.Errorf("damaged: %+v %v, want the damage in Err", l, err)
	}
}
