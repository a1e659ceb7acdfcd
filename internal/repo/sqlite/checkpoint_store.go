package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/logbook/logbook/internal/model"
)

// How a checkpoint row keeps its state (migration 00007). The latest checkpoint
// is always full; when a new one arrives, the one before it becomes a delta from
// the new state when that is much smaller (checkpoint_delta.go). Reading the
// latest therefore patches nothing, and reading an older one patches back from
// the nearest full row above it.
const (
	kindFull  = "full"
	kindDelta = "delta"
	codecZstd = "zstd"

	// compressAbove: a body at least this long is stored zstd-compressed when
	// that makes it smaller. Below it, compression saves tens of bytes and costs
	// a decoder call on every read.
	compressAbove = 1 << 10
)

const checkpointColumns = `id, session_id, iteration, state, last_seq, sha256, created_at, kind, codec, base_iteration, body`

// ckRow is one checkpoint row as stored. Checkpoint.State is empty until the
// row is read through a ckReader.
type ckRow struct {
	model.Checkpoint
	kind  string
	codec string
	text  []byte // the state column: a full state, uncompressed
	base  int64  // a delta's base iteration
	body  []byte // a compressed full state, or a delta
}

func scanCkRow(sc scanner) (ckRow, error) {
	var (
		r    ckRow
		base sql.NullInt64
	)
	err := sc.Scan(&r.ID, &r.SessionID, &r.Iteration, &r.text, &r.LastSeq, &r.SHA256, &r.CreatedAt,
		&r.kind, &r.codec, &base, &r.body)
	r.base = base.Int64
	return r, err
}

// storedState is how a full state is written: small or incompressible states
// go to the state column as text, as every row did before 00007, so that old
// and new rows read alike.
type storedState struct {
	text  string
	codec string
	body  []byte
}

func (s storedState) size() int { return len(s.text) + len(s.body) }

func encodeFull(state []byte) storedState {
	codec, body := encodeBody(state)
	if codec == "" {
		return storedState{text: string(state)}
	}
	return storedState{codec: codec, body: body}
}

// The encoder and decoder are made once: each holds megabytes of tables. Both
// are safe for concurrent EncodeAll and DecodeAll, and with no stream attached
// neither starts a goroutine.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			panic(err) // only bad options fail, and these are constant
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		// A damaged body must not make a read allocate without limit.
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// encodeBody compresses b when it is long enough and compression pays.
func encodeBody(b []byte) (codec string, body []byte) {
	if len(b) >= compressAbove {
		if z := zstdEncoder().EncodeAll(b, make([]byte, 0, len(b)/2)); len(z) < len(b) {
			return codecZstd, z
		}
	}
	return "", b
}

func decodeBody(codec string, body []byte) ([]byte, error) {
	switch codec {
	case "":
		return body, nil
	case codecZstd:
		return zstdDecoder().DecodeAll(body, nil)
	}
	return nil, fmt.Errorf("unknown codec %q", codec)
}

// fullState returns a full row's canonical state.
func (r ckRow) fullState() ([]byte, error) {
	if r.body == nil {
		return r.text, nil
	}
	return decodeBody(r.codec, r.body)
}

// ckReader rebuilds the states of one session's checkpoints inside one read
// (one transaction, so that a row and the rows it leans on are one snapshot).
// It remembers the trees it decoded, which share every part a patch left
// alone, so that walking the checkpoints newest first or oldest first patches
// each delta once.
type ckReader struct {
	ctx     context.Context
	q       querier
	tenant  string
	session string
	trees   map[int64]any
	rows    map[int64]ckLink // the rows behind trees
}

// ckLink is what blame needs of a row: who it is and what it leans on.
type ckLink struct {
	c    model.Checkpoint
	kind string
	base int64
}

func newCkReader(ctx context.Context, q querier, tenant, session string) *ckReader {
	return &ckReader{ctx: ctx, q: q, tenant: tenant, session: session, trees: map[int64]any{}, rows: map[int64]ckLink{}}
}

// maxTrees bounds what a reader remembers: two runs of deltas and more.
const maxTrees = 4 * snapshotEvery

// maxChain stops a walk along base iterations that loops, which only damage
// can make: a chain is at most snapshotEvery rows.
const maxChain = 1000

// read returns the row's checkpoint with its state rebuilt and checked against
// its SHA-256. A row that cannot be rebuilt, or does not match its hash, is
// corrupted, naming the row the damage is in (it may be one this row leans on);
// State then holds whatever could be rebuilt (nil when nothing).
func (r *ckReader) read(row ckRow) (model.Checkpoint, error) {
	c := row.Checkpoint
	if row.kind == kindFull {
		b, err := row.fullState()
		if err != nil {
			return c, model.Corrupted("checkpoint", row.ID)
		}
		c.State = b
		return c, verify(c)
	}
	t, err := r.tree(row, 0)
	if err != nil {
		return c, err
	}
	if c.State, err = json.Marshal(t); err != nil {
		return c, model.Corrupted("checkpoint", row.ID)
	}
	if err := verify(c); err != nil {
		err = r.blame(row, err)
		clear(r.trees) // nothing more may be built on what failed
		clear(r.rows)
		return c, err
	}
	return c, nil
}

// blame finds where the damage is when a delta's state fails its hash: the
// deltas it leans on are only checked now, nearest the full row first, since
// checking each as it is built would cost every deep read an encoding per step.
func (r *ckReader) blame(row ckRow, err error) error {
	var chain []ckLink
	for it, n := row.base, 0; n < maxChain; n++ {
		l, ok := r.rows[it]
		if !ok || l.kind != kindDelta {
			break
		}
		chain = append(chain, l)
		it = l.base
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i].c
		b, jerr := json.Marshal(r.trees[c.Iteration])
		if c.State = b; jerr != nil || verify(c) != nil {
			return model.Corrupted("checkpoint", c.ID)
		}
	}
	return err
}

// tree returns the decoded state of row. A full row under a delta is checked
// against its hash, so that damage there is named where it is.
func (r *ckReader) tree(row ckRow, depth int) (any, error) {
	if t, ok := r.trees[row.Iteration]; ok {
		return t, nil
	}
	bad := model.Corrupted("checkpoint", row.ID)
	var t any
	switch row.kind {
	case kindFull:
		c, err := r.read(row)
		if err != nil {
			return nil, err
		}
		if t, err = decodeTree(c.State); err != nil {
			return nil, bad
		}
	case kindDelta:
		if depth > maxChain || row.base <= row.Iteration {
			return nil, bad
		}
		bt, ok := r.trees[row.base]
		if !ok {
			base, err := r.row(row.base)
			if err == sql.ErrNoRows {
				return nil, bad // its base is gone: nothing can rebuild it
			}
			if err != nil {
				return nil, err
			}
			if bt, err = r.tree(base, depth+1); err != nil {
				return nil, err
			}
		}
		raw, err := decodeBody(row.codec, row.body)
		if err != nil {
			return nil, bad
		}
		p, err := decodeTree(raw)
		if _, ok := p.(map[string]any); err != nil || !ok {
			return nil, bad
		}
		t = model.MergePatch(bt, p)
	default:
		return nil, bad
	}
	if len(r.trees) >= maxTrees {
		clear(r.trees)
		clear(r.rows)
	}
	r.trees[row.Iteration] = t
	r.rows[row.Iteration] = ckLink{c: row.Checkpoint, kind: row.kind, base: row.base}
	return t, nil
}

// row reads one of the session's rows by iteration.
func (r *ckReader) row(iteration int64) (ckRow, error) {
	row, err := scanCkRow(r.q.QueryRowContext(r.ctx, `SELECT `+checkpointColumns+` FROM checkpoints
		WHERE tenant_id = ? AND session_id = ? AND iteration = ?`, r.tenant, r.session, iteration))
	if err != nil && err != sql.ErrNoRows {
		return row, mapErr(err)
	}
	return row, err
}

// getCheckpoint returns a session's checkpoint at iteration, or its latest when
// iteration is 0, read as ckReader.read does. q should be a transaction: a delta
// is rebuilt from other rows. Errors: KindNotFound, corrupted (with the
// checkpoint as far as it could be rebuilt).
func getCheckpoint(ctx context.Context, q querier, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	query := `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE tenant_id = ? AND session_id = ?`
	args := []any{tenant, sessionID}
	if iteration > 0 {
		query, args = query+` AND iteration = ?`, append(args, iteration)
	}
	row, err := scanCkRow(q.QueryRowContext(ctx, query+` ORDER BY iteration DESC LIMIT 1`, args...))
	if err == sql.ErrNoRows {
		if _, err := getSession(ctx, q, tenant, sessionID); err != nil {
			return model.Checkpoint{}, err
		}
		what := "latest"
		if iteration > 0 {
			what = "iteration " + itoa(iteration)
		}
		return model.Checkpoint{}, model.NotFound("checkpoint", what)
	}
	if err != nil {
		return model.Checkpoint{}, mapErr(err)
	}
	return newCkReader(ctx, q, tenant, sessionID).read(row)
}

// isCorrupted reports a read that found damage rather than failed.
func isCorrupted(err error) bool {
	return err != nil && model.AsError(err).Code == "corrupted"
}
