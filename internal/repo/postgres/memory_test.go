package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

var _ repo.Memory = (*postgres.Store)(nil)

// memBackend is one store under test with what a script's steps carry from
// one step to the next (cursors, generated ids).
type memBackend struct {
	name string
	m    repo.Memory
	kept map[string]string
}

// memStep is one call; both backends must give the same result and error.
type memStep struct {
	name string
	run  func(ctx context.Context, b *memBackend) (any, error)
}

// memBothBackends opens the reference (SQLite) and the store under test on
// empty databases.
func memBothBackends(t *testing.T) (ref, pg *memBackend) {
	t.Helper()
	pgs := mustOpen(t)
	lite, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	return &memBackend{"sqlite", lite, map[string]string{}}, &memBackend{"postgres", pgs, map[string]string{}}
}

var (
	memGeneratedID   = regexp.MustCompile(`^(agt|blk|psg)_[0-9a-f]{32}$`)
	memGeneratedIDIn = regexp.MustCompile(`(agt|blk|psg)_[0-9a-f]{32}`)
)

// memNormalize drops what legitimately differs between two runs: times,
// generated ids, cursors (they hold both) and search ranks.
func memNormalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unmarshalable %T: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return err.Error()
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch {
				case k == "created_at" || k == "updated_at" || k == "rank":
					delete(v, k)
				case k == "next_cursor":
					v[k] = x != nil
				default:
					v[k] = walk(x)
				}
			}
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case string:
			if memGeneratedID.MatchString(v) {
				return v[:4] + "…"
			}
		}
		return v
	}
	return walk(out)
}

// memSameError compares two errors as a client sees them.
func memSameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *model.Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return false
	}
	msg := func(e *model.Error) string { return memGeneratedIDIn.ReplaceAllString(e.Msg, "$1_…") }
	return ea.Kind == eb.Kind && ea.Code == eb.Code && msg(ea) == msg(eb) &&
		reflect.DeepEqual(ea.Fields, eb.Fields) && reflect.DeepEqual(ea.Extra, eb.Extra)
}

func memRunScript(t *testing.T, steps []memStep) {
	t.Helper()
	ctx := context.Background()
	ref, pg := memBothBackends(t)
	for _, st := range steps {
		want, wantErr := st.run(ctx, ref)
		got, gotErr := st.run(ctx, pg)
		if !memSameError(wantErr, gotErr) {
			t.Errorf("%s: error\n got  %#v\n want %#v", st.name, model.AsError(gotErr), model.AsError(wantErr))
			continue
		}
		if w, g := memNormalize(want), memNormalize(got); !reflect.DeepEqual(w, g) {
			wj, _ := json.Marshal(w)
			gj, _ := json.Marshal(g)
			t.Errorf("%s: result\n got  %s\n want %s", st.name, gj, wj)
		}
	}
}

func memPtr[T any](v T) *T { return &v }

// memPage reads a page at the cursor kept under key and keeps the next one.
func memPage[T any](b *memBackend, key string, get func(repo.PageRequest) (model.Page[T], error), limit int) (any, error) {
	p, err := get(repo.PageRequest{Limit: limit, Cursor: b.kept[key]})
	if p.NextCursor != nil {
		b.kept[key] = *p.NextCursor
	}
	return p, err
}

func TestMemoryAgentsMatchSQLite(t *testing.T) {
	obj := func(s string) model.Object { return model.Object(s) }
	create := func(in model.CreateAgent) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) { return b.m.CreateAgent(ctx, "t", in) }
	}
	list := func(key string, f model.AgentFilter, limit int) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			return memPage(b, key, func(p repo.PageRequest) (model.Page[model.Agent], error) { return b.m.ListAgents(ctx, "t", f, p) }, limit)
		}
	}
	update := func(id string, in model.UpdateAgent) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) { return b.m.UpdateAgent(ctx, "t", id, in) }
	}
	memRunScript(t, []memStep{
		{"create a1", create(model.CreateAgent{ID: "a1", Name: "ann", Tags: []string{"x", "y"}, Metadata: obj(`{"k":1,"n":{"a":1}}`)})},
		{"create a2", create(model.CreateAgent{ID: "a2", Name: "bob", Tags: []string{"y"}, Model: memPtr("m"), System: memPtr("be kind")})},
		{"create a3", create(model.CreateAgent{ID: "a3", Name: "ann", AgentType: "sleeptime", ToolIDs: []string{"t1"}})},
		{"create generated id", create(model.CreateAgent{Name: "zed"})},
		{"create duplicate", create(model.CreateAgent{ID: "a1", Name: "again"})},
		{"get", func(ctx context.Context, b *memBackend) (any, error) { return b.m.GetAgent(ctx, "t", "a2") }},
		{"get missing", func(ctx context.Context, b *memBackend) (any, error) { return b.m.GetAgent(ctx, "t", "nope") }},
		{"get other tenant", func(ctx context.Context, b *memBackend) (any, error) { return b.m.GetAgent(ctx, "u", "a1") }},
		{"list page 1", list("all", model.AgentFilter{}, 2)},
		{"list page 2", list("all", model.AgentFilter{}, 2)},
		{"list page 3", list("all", model.AgentFilter{}, 2)},
		{"list by name", list("name", model.AgentFilter{Name: "ann"}, 0)},
		{"list by tag", list("tag", model.AgentFilter{Tag: "y"}, 1)},
		{"list by tag page 2", list("tag", model.AgentFilter{Tag: "y"}, 1)},
		{"list tag absent", list("none", model.AgentFilter{Tag: "q"}, 0)},
		{"list other tenant", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.ListAgents(ctx, "u", model.AgentFilter{}, repo.PageRequest{})
		}},
		{"cursor of another filter", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.ListAgents(ctx, "t", model.AgentFilter{Name: "bob"}, repo.PageRequest{Cursor: b.kept["all"]})
		}},
		{"garbage cursor", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.ListAgents(ctx, "t", model.AgentFilter{}, repo.PageRequest{Cursor: "!!"})
		}},
		{"update fields and merge metadata", update("a1", model.UpdateAgent{
			Name: model.Optional[string]{Set: true, Value: "anne"}, Model: model.Optional[string]{Set: true, Value: "gpt"},
			Tags:     model.Optional[[]string]{Set: true, Value: []string{"z"}},
			Metadata: model.Optional[model.Object]{Set: true, Value: obj(`{"n":{"b":2},"k":null}`)}})},
		{"update clears", update("a2", model.UpdateAgent{System: model.Optional[string]{Set: true, Null: true},
			ToolIDs: model.Optional[[]string]{Set: true, Null: true}, Metadata: model.Optional[model.Object]{Set: true, Null: true}})},
		{"update missing", update("nope", model.UpdateAgent{Name: model.Optional[string]{Set: true, Value: "x"}})},
		{"list after update", list("after", model.AgentFilter{Tag: "z"}, 0)},
		{"delete", func(ctx context.Context, b *memBackend) (any, error) { return nil, b.m.DeleteAgent(ctx, "t", "a3") }},
		{"delete again", func(ctx context.Context, b *memBackend) (any, error) { return nil, b.m.DeleteAgent(ctx, "t", "a3") }},
		{"get deleted", func(ctx context.Context, b *memBackend) (any, error) { return b.m.GetAgent(ctx, "t", "a3") }},
	})
}

func TestMemoryBlocksMatchSQLite(t *testing.T) {
	put := func(agent, label string, in model.PutBlock, ifMatch *int64) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			blk, created, err := b.m.PutBlock(ctx, "t", agent, label, in, ifMatch)
			return []any{blk, created}, err
		}
	}
	appendTo := func(agent, label, text string, by repo.BlockEdit) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.AppendBlock(ctx, "t", agent, label, text, by)
		}
	}
	replace := func(label, old, new string, by repo.BlockEdit) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.ReplaceBlock(ctx, "t", "a", label, old, new, by)
		}
	}
	get := func(agent, label string) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) { return b.m.GetBlock(ctx, "t", agent, label) }
	}
	listBlocks := func(agent string) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) { return b.m.ListBlocks(ctx, "t", agent) }
	}
	history := func(agent, label, key string, limit int) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			return memPage(b, key, func(p repo.PageRequest) (model.Page[model.Block], error) {
				return b.m.BlockHistory(ctx, "t", agent, label, p)
			}, limit)
		}
	}
	deleteBlock := func(agent, label string) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			return nil, b.m.DeleteBlock(ctx, "t", agent, label)
		}
	}
	desc := memPtr("who the user is")
	steps := []memStep{
		{"agent", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"})
		}},
		{"no blocks yet", listBlocks("a")},
		{"list of missing agent", listBlocks("ghost")},
		{"get missing block", get("a", "human")},
		{"get block of missing agent", get("ghost", "human")},
		{"history of missing block", history("a", "human", "none", 0)},
		{"history of missing agent", history("ghost", "human", "none", 0)},
		{"put creates", put("a", "human", model.PutBlock{Value: "Name: Ann", Limit: 20, Description: desc}, nil)},
		{"put stale if-match", put("a", "human", model.PutBlock{Value: "x"}, memPtr(int64(7)))},
		{"put if-match on missing block", put("a", "nope", model.PutBlock{Value: "x"}, memPtr(repo.AnyVersion))},
		{"put matching if-match", put("a", "human", model.PutBlock{Value: "Name: Ann", Limit: 20, Description: desc}, memPtr(int64(1)))},
		{"put any version", put("a", "human", model.PutBlock{Value: "Name: Ann", Limit: 20}, memPtr(repo.AnyVersion))},
		{"put over the limit", put("a", "human", model.PutBlock{Value: strings.Repeat("é", 21), Limit: 20}, nil)},
		{"put to missing agent", put("ghost", "human", model.PutBlock{Value: "x"}, nil)},
		{"replace counts characters", replace("human", "Ann", "Ännäöüß", repo.EditByAPI)},
		{"append over the limit", appendTo("a", "human", "and a long tail", repo.EditByAPI)},
		{"replace missing text", replace("human", "Bob", "Carl", repo.EditByAPI)},
		{"replace missing block", replace("nope", "a", "b", repo.EditByAPI)},
		{"tool append to missing block", appendTo("a", "nope", "x", repo.EditByTool)},
		{"API append creates", appendTo("a", "notes", "first", repo.EditByAPI)},
		{"API append appends", appendTo("a", "notes", "second", repo.EditByAPI)},
		{"append to missing agent", appendTo("ghost", "notes", "x", repo.EditByAPI)},
		{"read-only block", put("a", "persona", model.PutBlock{Value: "I am", ReadOnly: true}, nil)},
		{"tool append to read-only", appendTo("a", "persona", "x", repo.EditByTool)},
		{"tool replace in read-only", replace("persona", "I", "We", repo.EditByTool)},
		{"API append to read-only", appendTo("a", "persona", "helpful", repo.EditByAPI)},
		{"tool append", appendTo("a", "notes", "third", repo.EditByTool)},
		{"labels sort bytewise", put("a", "Zeta", model.PutBlock{Value: "z"}, nil)},
		{"labels sort bytewise 2", put("a", "_under", model.PutBlock{Value: "u"}, nil)},
		{"labels sort bytewise 3", put("a", "a-b", model.PutBlock{Value: "u"}, nil)},
		{"labels sort bytewise 4", put("a", "ab", model.PutBlock{Value: "u"}, nil)},
		{"list blocks", listBlocks("a")},
		{"history page 1", history("a", "human", "h", 2)},
		{"history page 2", history("a", "human", "h", 2)},
		{"history page 3", history("a", "human", "h", 2)},
		{"history cursor of another block", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.BlockHistory(ctx, "t", "a", "notes", repo.PageRequest{Cursor: b.kept["h"]})
		}},
		{"delete block", deleteBlock("a", "notes")},
		{"delete block again", deleteBlock("a", "notes")},
		{"delete block of missing agent", deleteBlock("ghost", "notes")},
		{"history of deleted block", history("a", "notes", "deleted", 0)},
		{"recreate starts at version 1", appendTo("a", "notes", "again", repo.EditByAPI)},
		{"history of recreated block", history("a", "notes", "recreated", 0)},
	}
	// 105 versions: the history keeps the newest 100.
	for i := range 103 {
		steps = append(steps, memStep{fmt.Sprintf("long append %d", i), appendTo("a", "long", fmt.Sprint(i%10), repo.EditByAPI)})
	}
	steps = append(steps, memStep{"history keeps 100 versions", history("a", "long", "long", 200)})
	// 1,000,000 characters of three bytes each: 8 MiB of history holds two.
	for i := range 4 {
		steps = append(steps, memStep{fmt.Sprintf("big put %d", i),
			func(ctx context.Context, b *memBackend) (any, error) {
				blk, _, err := b.m.PutBlock(ctx, "t", "a", "big", model.PutBlock{Value: strings.Repeat(string(rune('あ'+i)), 1_000_000), Limit: 1_000_000}, nil)
				return blk.Version, err
			}})
	}
	steps = append(steps, memStep{"history keeps 8 MiB", func(ctx context.Context, b *memBackend) (any, error) {
		p, err := b.m.BlockHistory(ctx, "t", "a", "big", repo.PageRequest{Limit: 100})
		versions := []int64{}
		for _, v := range p.Data {
			versions = append(versions, v.Version)
		}
		return versions, err
	}})
	steps = append(steps,
		memStep{"delete agent", func(ctx context.Context, b *memBackend) (any, error) { return nil, b.m.DeleteAgent(ctx, "t", "a") }},
		memStep{"block of deleted agent", get("a", "human")},
		memStep{"blocks of deleted agent", listBlocks("a")},
	)
	memRunScript(t, steps)
}

func TestMemoryPassagesMatchSQLite(t *testing.T) {
	add := func(agent, content string, tags ...string) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			p, err := b.m.CreatePassage(ctx, "t", agent, model.CreatePassage{Content: content, Tags: tags})
			if err == nil {
				b.kept["last"] = p.ID
			}
			return p, err
		}
	}
	list := func(agent, key string, limit int) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			return memPage(b, key, func(p repo.PageRequest) (model.Page[model.Passage], error) {
				return b.m.ListPassages(ctx, "t", agent, p)
			}, limit)
		}
	}
	search := func(agent string, in model.PassageSearch) func(context.Context, *memBackend) (any, error) {
		return func(ctx context.Context, b *memBackend) (any, error) {
			hits, err := b.m.SearchPassages(ctx, "t", agent, in)
			ids := []string{}
			for _, h := range hits {
				ids = append(ids, h.Content)
			}
			return ids, err
		}
	}
	memRunScript(t, []memStep{
		{"agent", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"})
		}},
		{"no passages", list("a", "empty", 0)},
		{"passages of missing agent", list("ghost", "ghost", 0)},
		{"add to missing agent", add("ghost", "x")},
		{"add 1", add("a", "The user drinks black coffee every morning.", "habit")},
		{"add 2", add("a", "The user has a cat named Miso.", "pet", "habit")},
		{"add 3", add("a", "Coffee gives the user headaches after noon.")},
		{"add with metadata", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "meta", Metadata: model.Object(`{"b":1,"a":[2]}`)})
		}},
		{"get", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.GetPassage(ctx, "t", "a", b.kept["last"])
		}},
		{"get missing", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.GetPassage(ctx, "t", "a", "psg_nope")
		}},
		{"get of another agent", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.GetPassage(ctx, "t", "ghost", b.kept["last"])
		}},
		{"list page 1", list("a", "p", 3)},
		{"list page 2", list("a", "p", 3)},
		{"cursor of another agent", func(ctx context.Context, b *memBackend) (any, error) {
			return b.m.ListPassages(ctx, "t", "other", repo.PageRequest{Cursor: b.kept["p"]})
		}},
		{"search missing agent", search("ghost", model.PassageSearch{Query: "coffee", Limit: 10})},
		{"search no words", search("a", model.PassageSearch{Query: `"*:() ?`, Limit: 10})},
		{"search", search("a", model.PassageSearch{Query: "coffee", Limit: 10})},
		{"search with tag", search("a", model.PassageSearch{Query: "user", Tags: []string{"habit"}, Limit: 10})},
		{"search with two tags", search("a", model.PassageSearch{Query: "user", Tags: []string{"habit", "pet"}, Limit: 10})},
		{"search with absent tag", search("a", model.PassageSearch{Query: "user", Tags: []string{"nope"}, Limit: 10})},
		{"search after the future", search("a", model.PassageSearch{Query: "user", After: memPtr(model.Now() + 60_000), Limit: 10})},
		{"search before the past", search("a", model.PassageSearch{Query: "user", Before: memPtr(model.Time(1)), Limit: 10})},
		{"search limit 0", search("a", model.PassageSearch{Query: "cat", Limit: 0})},
		{"search offset past the hits", search("a", model.PassageSearch{Query: "cat", Limit: 5, Offset: 5})},
		{"search syntax is words", search("a", model.PassageSearch{Query: `"cat" AND NEAR(Miso*`, Limit: 5})},
		{"delete", func(ctx context.Context, b *memBackend) (any, error) {
			return nil, b.m.DeletePassage(ctx, "t", "a", b.kept["last"])
		}},
		{"delete again", func(ctx context.Context, b *memBackend) (any, error) {
			return nil, b.m.DeletePassage(ctx, "t", "a", b.kept["last"])
		}},
		{"search after delete", search("a", model.PassageSearch{Query: "meta", Limit: 5})},
		{"delete agent", func(ctx context.Context, b *memBackend) (any, error) { return nil, b.m.DeleteAgent(ctx, "t", "a") }},
		{"passages of deleted agent", list("a", "gone", 0)},
		{"search of deleted agent", search("a", model.PassageSearch{Query: "coffee", Limit: 10})},
	})
}

// Every fault point the SQLite store checks in memory calls is checked here too.
func TestMemoryFaultPoints(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	plain := memOpenURL(t, url)
	if _, err := plain.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		point repo.FaultPoint
		call  func(*postgres.Store) error
	}{
		{repo.PointBlockRead, func(s *postgres.Store) error { _, err := s.GetBlock(ctx, "t", "a", "x"); return err }},
		{repo.PointBlockRead, func(s *postgres.Store) error { _, err := s.ListBlocks(ctx, "t", "a"); return err }},
		{repo.PointBlockRead, func(s *postgres.Store) error {
			_, err := s.BlockHistory(ctx, "t", "a", "x", repo.PageRequest{})
			return err
		}},
		{repo.PointBlockWrite, func(s *postgres.Store) error {
			_, _, err := s.PutBlock(ctx, "t", "a", "x", model.PutBlock{Value: "v"}, nil)
			return err
		}},
		{repo.PointBlockWrite, func(s *postgres.Store) error {
			_, err := s.AppendBlock(ctx, "t", "a", "x", "v", repo.EditByAPI)
			return err
		}},
		{repo.PointBlockWrite, func(s *postgres.Store) error {
			_, err := s.ReplaceBlock(ctx, "t", "a", "x", "v", "w", repo.EditByAPI)
			return err
		}},
		{repo.PointBlockWrite, func(s *postgres.Store) error { return s.DeleteBlock(ctx, "t", "a", "x") }},
		{repo.PointArchivalRead, func(s *postgres.Store) error { _, err := s.GetPassage(ctx, "t", "a", "p"); return err }},
		{repo.PointArchivalRead, func(s *postgres.Store) error {
			_, err := s.ListPassages(ctx, "t", "a", repo.PageRequest{})
			return err
		}},
		{repo.PointArchivalRead, func(s *postgres.Store) error {
			_, err := s.SearchPassages(ctx, "t", "a", model.PassageSearch{Query: "x", Limit: 1})
			return err
		}},
		{repo.PointArchivalWrite, func(s *postgres.Store) error {
			_, err := s.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "x"})
			return err
		}},
		{repo.PointArchivalWrite, func(s *postgres.Store) error { return s.DeletePassage(ctx, "t", "a", "p") }},
	} {
		faults, err := repo.NewFaults(1, repo.FaultRule{Point: tc.point, Kind: repo.FaultError, Rate: 1})
		if err != nil {
			t.Fatal(err)
		}
		st, err := postgres.Open(ctx, postgres.Config{URL: url, Faults: faults})
		if err != nil {
			t.Fatal(err)
		}
		err = tc.call(st)
		st.Close()
		if !errors.Is(err, repo.ErrInjected) || model.AsError(err).Code != "storage_unavailable" || len(faults.Events()) != 1 {
			t.Errorf("%s: %v, %d faults fired", tc.point, err, len(faults.Events()))
		}
	}
	if b, err := plain.ListBlocks(ctx, "t", "a"); err != nil || len(b) != 0 {
		t.Errorf("a failed write left %d blocks (%v)", len(b), err)
	}
}

// memOpenURL opens another handle on url, as a second Logbook process would.
func memOpenURL(t testing.TB, url string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
