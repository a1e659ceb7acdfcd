package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// ckMethods is the part of repo.Checkpoints compared here (resume and repair
// are other tests').
type ckMethods interface {
	PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error)
	PatchCheckpoint(ctx context.Context, tenant, sessionID string, in model.PatchCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error)
	GetCheckpoint(ctx context.Context, tenant, sessionID string, iteration int64) (model.Checkpoint, error)
	ListCheckpoints(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Checkpoint], error)
}

// ckStoredRow is a checkpoint row as either database holds it.
type ckStoredRow struct {
	Iteration, LastSeq int64
	Kind, Codec, State string
	SHA256             string
	Base               *int64
	Body               []byte
}

// The same writes, failed ones among them, give the same answers, errors,
// rows (byte for byte, compressed bodies and deltas included), pages and
// cursors on PostgreSQL as on SQLite, the reference.
func TestCheckpointsMatchSQLitePG(t *testing.T) {
	ctx := context.Background()
	e := ckOpen(t)
	path := filepath.Join(t.TempDir(), "l.db")
	lite, err := sqlite.Open(ctx, sqlite.Config{Path: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	if _, err := lite.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	e.session(t, "t", "s")
	stores := map[string]ckMethods{"postgres": e.st, "sqlite": lite}

	same := func(what string, do func(st ckMethods) (any, error)) {
		t.Helper()
		pgV, pgErr := do(stores["postgres"])
		liteV, liteErr := do(stores["sqlite"])
		if (pgErr == nil) != (liteErr == nil) {
			t.Fatalf("%s: postgres %v, sqlite %v", what, pgErr, liteErr)
		}
		if pgErr != nil {
			p, l := model.AsError(pgErr), model.AsError(liteErr)
			if p.Kind != l.Kind || p.Code != l.Code || p.Msg != l.Msg || !reflect.DeepEqual(p.Fields, l.Fields) || !reflect.DeepEqual(p.Extra, l.Extra) {
				t.Fatalf("%s: postgres %+v, sqlite %+v", what, p, l)
			}
			return
		}
		if !reflect.DeepEqual(pgV, liteV) {
			t.Fatalf("%s: postgres %+v, sqlite %+v", what, pgV, liteV)
		}
	}
	// Ids and times are the store's own; the rest must agree.
	// A checkpoint the client named none of is named by its id, and so is the
	// parent it follows.
	bare := func(c model.Checkpoint) model.Checkpoint {
		if c.ClientID == c.ID {
			c.ClientID = ""
		}
		if c.ParentID != nil {
			c.ParentID = new(string)
		}
		c.ID, c.CreatedAt = "", 0
		return c
	}
	i := func(n int64) *int64 { return &n }

	states, patches := ckStates(40)
	const keep = 20
	for n := range states {
		it := int64(n + 1)
		if it%7 == 0 { // a loser and an invalid write first
			same(fmt.Sprintf("stale %d", it), func(st ckMethods) (any, error) {
				return st.PatchCheckpoint(ctx, "t", "s", model.PatchCheckpoint{Iteration: it, StatePatch: patches[n], ExpectedIteration: i(it - 2)}, model.KeepLastN(int64(keep)))
			})
			same(fmt.Sprintf("invalid %d", it), func(st ckMethods) (any, error) {
				return st.PatchCheckpoint(ctx, "t", "s", model.PatchCheckpoint{Iteration: it, StatePatch: model.JSON(`{"pause_until_ms":"x"}`)}, model.KeepLastN(int64(keep)))
			})
		}
		same(fmt.Sprintf("write %d", it), func(st ckMethods) (any, error) {
			var c model.Checkpoint
			var err error
			if n == 0 || n%3 == 1 {
				c, err = st.PutCheckpoint(ctx, "t", "s", model.PutCheckpoint{Iteration: it, State: states[n], ExpectedIteration: i(it - 1)}, model.KeepLastN(int64(keep)))
			} else {
				c, err = st.PatchCheckpoint(ctx, "t", "s", model.PatchCheckpoint{Iteration: it, StatePatch: patches[n]}, model.KeepLastN(int64(keep)))
			}
			return bare(c), err
		})
	}
	same("put into another tenant", func(st ckMethods) (any, error) {
		return st.PutCheckpoint(ctx, "u", "s", model.PutCheckpoint{Iteration: 99, State: model.JSON(`{}`)}, model.KeepLastN(int64(keep)))
	})
	same("get a pruned one", func(st ckMethods) (any, error) { return st.GetCheckpoint(ctx, "t", "s", 3) })
	for it := int64(0); it <= 40; it += 5 {
		same(fmt.Sprintf("get %d", it), func(st ckMethods) (any, error) {
			c, err := st.GetCheckpoint(ctx, "t", "s", it)
			return bare(c), err
		})
	}
	// A cursor holds a checkpoint's id, which is each store's own: each
	// store pages with its own cursors, and the pages must agree.
	cursors := map[ckMethods]string{}
	for page := 0; ; page++ {
		more := false
		same(fmt.Sprintf("page %d", page), func(st ckMethods) (any, error) {
			pg, err := st.ListCheckpoints(ctx, "t", "s", repo.PageRequest{Limit: 6, Cursor: cursors[st]})
			for i := range pg.Data {
				pg.Data[i] = bare(pg.Data[i])
			}
			if more = pg.NextCursor != nil; more {
				cursors[st], pg.NextCursor = *pg.NextCursor, new(string)
			}
			return pg, err
		})
		if !more {
			break
		}
	}
	same("a foreign cursor", func(st ckMethods) (any, error) {
		return st.ListCheckpoints(ctx, "t", "s", repo.PageRequest{Cursor: "bm9wZQ"})
	})

	// The rows themselves, so that an export or a backup of either is one.
	pgRows := ckRowsPG(t, e)
	liteRows := ckRowsSQLite(t, path)
	deltas := 0
	for _, r := range pgRows {
		if r.Kind == "delta" {
			deltas++
		}
	}
	if last := pgRows[len(pgRows)-1]; last.Kind != "full" || last.Codec != "zstd" || deltas < keep/2 {
		t.Errorf("%d deltas under a %s/%s latest: the test wants mostly deltas under a compressed one", deltas, last.Kind, last.Codec)
	}
	if len(pgRows) != keep || !reflect.DeepEqual(pgRows, liteRows) {
		t.Errorf("%d rows stored on postgres, %d on sqlite, or they differ", len(pgRows), len(liteRows))
		for i := range min(len(pgRows), len(liteRows)) {
			if !reflect.DeepEqual(pgRows[i], liteRows[i]) {
				p, l := pgRows[i], liteRows[i]
				t.Errorf("iteration %d: postgres %s/%s base %v body %d state %d; sqlite %s/%s base %v body %d state %d", p.Iteration,
					p.Kind, p.Codec, p.Base, len(p.Body), len(p.State), l.Kind, l.Codec, l.Base, len(l.Body), len(l.State))
			}
		}
	}
}

const ckStoredColumns = `iteration, last_seq, kind, codec, state, sha256, base_iteration, body`

func ckRowsPG(t *testing.T, e ckEnv) []ckStoredRow {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT `+ckStoredColumns+` FROM checkpoints ORDER BY iteration`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ckStoredRow
	for rows.Next() {
		var r ckStoredRow
		if err := rows.Scan(&r.Iteration, &r.LastSeq, &r.Kind, &r.Codec, &r.State, &r.SHA256, &r.Base, &r.Body); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func ckRowsSQLite(t *testing.T, path string) []ckStoredRow {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT ` + ckStoredColumns + ` FROM checkpoints ORDER BY iteration`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ckStoredRow
	for rows.Next() {
		var r ckStoredRow
		var base sql.NullInt64
		if err := rows.Scan(&r.Iteration, &r.LastSeq, &r.Kind, &r.Codec, &r.State, &r.SHA256, &base, &r.Body); err != nil {
			t.Fatal(err)
		}
		if base.Valid {
			r.Base = &base.Int64
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
