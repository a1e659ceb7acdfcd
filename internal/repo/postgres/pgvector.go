package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// PGVector says whether searches by meaning use the pgvector extension.
type PGVector string

const (
	// PGVectorAuto uses pgvector when the database has it or can create it,
	// and the in-memory search otherwise.
	PGVectorAuto PGVector = "auto"
	// PGVectorOn refuses to open without pgvector.
	PGVectorOn PGVector = "on"
	// PGVectorOff always uses the in-memory search.
	PGVectorOff PGVector = "off"
)

// ParsePGVector reads --pgvector; the empty string is auto.
func ParsePGVector(s string) (PGVector, error) {
	switch PGVector(s) {
	case "", PGVectorAuto:
		return PGVectorAuto, nil
	case PGVectorOn, PGVectorOff:
		return PGVector(s), nil
	}
	return "", fmt.Errorf("pgvector must be auto, on or off, not %q", s)
}

// hnswMaxDims is the longest vector pgvector's HNSW index takes; longer
// ones are searched exactly by the in-memory cache.
const hnswMaxDims = 2000

// vectorFromF32LE turns the embedding column (little-endian float32s, the
// form both backends store and export) into pgvector's type. It is SQL, not
// Go, so that a generated column keeps the two in step on every write path
// (insert, the embedding worker, import) without any of them knowing.
// PL/pgSQL rather than plain SQL for d: an inlined SQL function would read
// every byte through the column, detoasting a stored 3 KB embedding once per
// get_byte (a table's existing rows took ~12 ms each), where a variable is
// detoasted once. PostgreSQL gives |, & and << one precedence, hence every
// parenthesis.
const vectorFromF32LE = `CREATE OR REPLACE FUNCTION logbook_vector_from_f32le(b bytea) RETURNS vector
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
DECLARE
  d bytea := b || '\x'::bytea;
  -- 2^(e-150): a normal float32's (mantissa | 2^23) times this is its value.
  p float8[] := (SELECT array_agg(2.0::float8 ^ (e - 150) ORDER BY e) FROM generate_series(1, 254) AS e);
BEGIN
  IF length(d) = 0 OR length(d) % 4 <> 0 OR length(d) / 4 > 16000 THEN
    RETURN NULL;
  END IF;
  RETURN (SELECT array_agg(
      (1 - 2 * (w >> 31))::float8 *
      (CASE WHEN ((w >> 23) & 255) = 0 THEN (w & 8388607)::float8 * 1.401298464324817e-45::float8 -- subnormal: × 2^-149
            ELSE ((w & 8388607) | 8388608)::float8 * p[((w >> 23) & 255)::int] END)
      ORDER BY i)::real[]::vector
    FROM (SELECT i, (get_byte(d, i)::bigint
                   | (get_byte(d, i+1)::bigint << 8)
                   | (get_byte(d, i+2)::bigint << 16)
                   | (get_byte(d, i+3)::bigint << 24)) AS w
          FROM generate_series(0, length(d) - 4, 4) AS i) AS words);
END
$fn$`

// errNoPGVector says the database has no pgvector to use.
var errNoPGVector = errors.New("the pgvector extension is not installed on this PostgreSQL server")

// setupPGVector makes passages searchable through pgvector: the extension,
// the conversion function and passages.embedding_vec, a stored column
// generated from embedding. It runs on every Open, under an advisory lock so
// that processes starting together take turns, and touches the table only
// the first time.
func (s *Store) setupPGVector(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('logbook.pgvector'))`); err != nil {
			return err
		}
		var available, installed, column bool
		if err := tx.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'),
			EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector'),
			EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
				AND table_name = 'passages' AND column_name = 'embedding_vec')`).Scan(&available, &installed, &column); err != nil {
			return err
		}
		if !available && !installed {
			return errNoPGVector
		}
		if !installed {
			if _, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
				return fmt.Errorf("create extension vector (a superuser can run it once for this database): %w", err)
			}
		}
		var version string
		if err := tx.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version); err != nil {
			return err
		}
		if !pgvectorAtLeast(version, 0, 8) {
			return fmt.Errorf("pgvector %s is installed; Logbook needs 0.8 or later (iterative index scans keep a filtered search complete): ALTER EXTENSION vector UPDATE", version)
		}
		if column {
			return nil
		}
		if _, err := tx.Exec(ctx, vectorFromF32LE); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `ALTER TABLE passages ADD COLUMN IF NOT EXISTS embedding_vec vector
			GENERATED ALWAYS AS (logbook_vector_from_f32le(embedding)) STORED`)
		return err
	})
}

// pgvectorAtLeast reports whether extversion (0.8.1) is major.minor or later.
func pgvectorAtLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (ma > major || ma == major && mi >= minor)
}

// hnswIndexes are the HNSW indexes of passages.embedding_vec, one per
// vector length (an index needs one length; agents pin theirs), each
// partial on that length. A search of a length whose index is not built yet
// starts its build in the background and is answered by the cache.
type hnswIndexes struct {
	mu    sync.Mutex
	ready map[int]bool
	busy  map[int]bool
}

func hnswIndexName(dims int) string { return "passages_embedding_hnsw_" + strconv.Itoa(dims) }

// hnswExpr is the indexed expression for vectors of dims; a query must
// spell it the same way for the planner to use the index.
func hnswExpr(dims int) string { return "(p.embedding_vec::vector(" + strconv.Itoa(dims) + "))" }

// hnswPredicate is the index's WHERE, a literal so the planner can prove it.
func hnswPredicate(dims int) string { return "octet_length(p.embedding) = " + strconv.Itoa(4*dims) }

// hnswReady reports whether the index for dims is built and valid, starting
// its build when it is not (and none is under way).
func (s *Store) hnswReady(ctx context.Context, dims int) bool {
	h := &s.hnsw
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ready[dims] {
		return true
	}
	if h.busy[dims] {
		return false
	}
	exists, valid, err := indexState(ctx, s.pool, hnswIndexName(dims))
	if err != nil {
		return false
	}
	if exists && valid {
		h.ready[dims] = true
		return true
	}
	h.busy[dims] = true
	s.builds.Add(1)
	go func() {
		defer s.builds.Done()
		err := s.buildHNSW(s.buildCtx, dims)
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.busy, dims)
		h.ready[dims] = err == nil
	}()
	return false
}

// buildHNSW builds the index for dims concurrently with writes. The
// builder holds a session advisory lock named after the index, so an
// invalid index is known to be a dead build's (dropped and built again)
// rather than another process's build under way (left to it: errBuilding).
func (s *Store) buildHNSW(ctx context.Context, dims int) error {
	name := hnswIndexName(dims)
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection is closed after, not returned to the pool with the
	// lock or the setting below.
	conn := pc.Hijack()
	defer conn.Close(context.Background())
	var mine bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext('logbook.' || $1))`, name).Scan(&mine); err != nil {
		return err
	}
	if !mine {
		return errBuilding
	}
	exists, valid, err := indexState(ctx, conn, name)
	switch {
	case err != nil:
		return err
	case exists && valid:
		return nil
	case exists:
		if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+name); err != nil {
			return err
		}
	}
	// A build whose graph fits in maintenance_work_mem is many times faster
	// (100k × 768 needs ~400 MB).
	if _, err := conn.Exec(ctx, `SET maintenance_work_mem = '512MB'`); err != nil {
		return err
	}
	expr := strings.ReplaceAll(hnswExpr(dims), "p.", "")
	pred := strings.ReplaceAll(hnswPredicate(dims), "p.", "")
	if _, err = conn.Exec(ctx, `CREATE INDEX CONCURRENTLY `+name+` ON passages
		USING hnsw (`+expr+` vector_cosine_ops) WHERE `+pred); err != nil {
		return err
	}
	// The planner weighs the index against reading the agent's rows and
	// sorting them (better for a small agent) by the table's statistics:
	// fresh ones, rather than whatever autovacuum last left.
	_, err = conn.Exec(ctx, `ANALYZE passages`)
	return err
}

// indexState says whether the index exists in the current schema and, if
// so, whether it is valid (an index whose concurrent build is under way, or
// died, is not).
func indexState(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, name string) (exists, valid bool, err error) {
	err = q.QueryRow(ctx, `SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, name).Scan(&valid)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	return err == nil, valid, err
}

// errBuilding says another process is building the index.
var errBuilding = errors.New("another process is building the index")

// DefaultEfSearch is the least hnsw.ef_search a search asks for: the
// candidates pgvector keeps while walking the graph. More finds more of the
// true nearest and costs more (docs/benchmarks.md, pgvector).
const DefaultEfSearch = 100

var efSearchMin = DefaultEfSearch

// pgvectorMaxK is the deepest search the HNSW index answers; deeper ones
// (and "all") go to the exact in-memory search.
const pgvectorMaxK = 1000

// searchPGVector ranks the agent's passages for q through the HNSW index of
// its vector length, best first. ok is false when this search is not one
// for pgvector (not set up, a length without an index yet, too deep), and
// the caller searches the cache instead.
func (s *Store) searchPGVector(ctx context.Context, tenant, agentID string, dims int, q vecindex.Query, tags []string) (hits []vecindex.Hit, ok bool, err error) {
	if !s.pgvector || dims <= 0 || dims > hnswMaxDims || q.K < 0 || q.K > pgvectorMaxK || !indexable(q.Vector) || !s.hnswReady(ctx, dims) {
		return nil, false, nil
	}
	args := []any{tenant, agentID, vectorLiteral(q.Vector)}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	where := []string{"p.tenant_id = $1", "p.agent_id = $2", hnswPredicate(dims)}
	if q.Now != 0 {
		where = append(where, passageLivePG(arg(int64(q.Now))))
	}
	if q.After != nil {
		where = append(where, "p.created_at >= "+arg(int64(*q.After))+"::bigint")
	}
	if q.Before != nil {
		where = append(where, "p.created_at <= "+arg(int64(*q.Before))+"::bigint")
	}
	for _, tag := range tags {
		where = append(where, passageTaggedPG(arg(tag)))
	}
	// relaxed_order lets the index scan go on past ef_search until LIMIT rows
	// pass the filters (another agent's vectors share the index); its order
	// is nearly sorted, and Rescore puts the few it returns in the cache's
	// exact order with the cache's distances.
	dist := hnswExpr(dims) + " <=> $3::vector(" + strconv.Itoa(dims) + ")"
	query := `WITH near AS MATERIALIZED (SELECT p.id, p.created_at, ` + dist + ` AS d FROM passages p
		WHERE ` + strings.Join(where, " AND ") + ` ORDER BY d LIMIT ` + strconv.Itoa(q.K) + `)
		SELECT n.id, n.created_at, p.embedding FROM near n JOIN passages p ON p.tenant_id = $1 AND p.agent_id = $2 AND p.id = n.id`
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		ef := min(max(efSearchMin, 2*q.K), pgvectorMaxK)
		if _, err := tx.Exec(ctx, `SET LOCAL hnsw.ef_search = `+strconv.Itoa(ef)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL hnsw.iterative_scan = relaxed_order`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		var vectors [][]float32
		hits, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (vecindex.Hit, error) {
			var (
				h       vecindex.Hit
				created int64
				raw     []byte
			)
			err := r.Scan(&h.ID, &created, &raw)
			h.CreatedAt = model.Time(created)
			vectors = append(vectors, repo.DecodeVector(raw))
			return h, err
		})
		if err == nil {
			vecindex.Rescore(q.Vector, hits, func(i int) []float32 { return vectors[i] })
		}
		return err
	})
	return hits, true, mapErr(err)
}

// indexable reports whether pgvector can rank by v: not the zero vector
// (its cosine distance to anything is NaN there, where the cache says 1) and
// no number whose square overflows the float32s pgvector computes in.
func indexable(v []float32) bool {
	var norm float64
	for _, f := range v {
		if math.Abs(float64(f)) > 1e18 {
			return false
		}
		norm += float64(f) * float64(f)
	}
	return norm > 0
}

// vectorLiteral is v in pgvector's text form, [1,2,3].
func vectorLiteral(v []float32) string {
	b := make([]byte, 0, 1+10*len(v))
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return string(append(b, ']'))
}

// PGVectorInUse reports whether searches by meaning go through pgvector, and
// under auto, why they do not.
func (s *Store) PGVectorInUse() (bool, error) { return s.pgvector, s.pgvectorErr }
