package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Config says which database to use.
type Config struct {
	URL      string // postgres://user@host:5432/db
	Migrate  bool   // apply pending migrations on Open
	MaxConns int32  // pool size; 0 lets pgxpool pick (4 × CPUs, at least 4)
	// Faults injects failures at named points; tests only. Nil in production.
	Faults *repo.Faults
	// VectorCacheBytes bounds the passages' embeddings kept in memory for
	// searches by meaning; 0 means no bound.
	VectorCacheBytes int64
	// PGVector says whether passages are searched by meaning through the
	// pgvector extension (auto: when the server has it).
	PGVector PGVector
}

// Store is the PostgreSQL storage handle, safe for concurrent use by many
// goroutines and by several Logbook processes on one database: every write is
// one transaction whose compare-and-set (a session's last_seq, a checkpoint's
// iteration, a block's version) is checked on the row it locks.
type Store struct {
	pool    *pgxpool.Pool
	faults  *repo.Faults
	vectors *repo.VectorCache
	url     string
	runner  string // this process's name on the jobs it runs (jobs.go)
	appends appendQueuesPG
	events  repo.EventSignal

	feedSecret []byte // the live feed's ids are sealed with it (FeedSecret)

	pgvector    bool  // passages.embedding_vec is there: search through HNSW
	pgvectorErr error // why not, under PGVectorAuto
	hnsw        hnswIndexes
	buildCtx    context.Context // index builds in the background end with Close
	stopBuilds  context.CancelFunc
	builds      sync.WaitGroup

	listenOnce sync.Once          // the feed's listener starts with its first reader
	stopListen context.CancelFunc // set by listenOnce
	listenDone chan struct{}

	// The sequencer and the usage folder (usagefold.go), woken by appends.
	sequenceWake, usageWake        chan struct{}
	stopBackground                 context.CancelFunc
	sequencerDone, usageFolderDone chan struct{}
}

// Open connects to cfg.URL, applies migrations when cfg.Migrate is set, and
// checks that the schema is there.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	if cfg.Migrate {
		if err := Migrate(ctx, cfg.URL, "up", discard{}); err != nil {
			return nil, fmt.Errorf("postgres: migrate: %w", err)
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool, faults: cfg.Faults, url: cfg.URL, runner: newID("run_")}
	// Half the pool writes appends at most, in groups; the rest serves reads.
	s.appends.max = max(2, int(pc.MaxConns)/2)
	s.vectors = repo.NewVectorCache(s.loadVectors, cfg.VectorCacheBytes)
	var one int
	if err := pool.QueryRow(ctx, `SELECT 1 FROM sessions LIMIT 1`).Scan(&one); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		pool.Close()
		return nil, fmt.Errorf("postgres: is the schema migrated (logbook migrate up)? %w", err)
	}
	if s.feedSecret, err = loadFeedSecretPG(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: read the live feed's secret: %w", err)
	}
	s.hnsw = hnswIndexes{ready: map[int]bool{}, busy: map[int]bool{}}
	s.buildCtx, s.stopBuilds = context.WithCancel(context.Background())
	if cfg.PGVector != PGVectorOff {
		switch err := s.setupPGVector(ctx); {
		case err == nil:
			s.pgvector = true
		case cfg.PGVector == PGVectorOn:
			pool.Close()
			return nil, fmt.Errorf("postgres: --pgvector on: %w", err)
		default:
			s.pgvectorErr = err
		}
	}
	bg, stop := context.WithCancel(context.Background())
	s.stopBackground = stop
	s.sequenceWake, s.usageWake = make(chan struct{}, 1), make(chan struct{}, 1)
	s.sequencerDone, s.usageFolderDone = make(chan struct{}), make(chan struct{})
	go s.runSequencer(bg)
	go s.runUsageFolder(bg)
	return s, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Close stops the feed's listener and closes the pool.
func (s *Store) Close() error {
	s.listenOnce.Do(func() {}) // none starts after this
	if s.stopBuilds != nil {
		s.stopBuilds()
		s.builds.Wait()
	}
	if s.stopListen != nil {
		s.stopListen()
		<-s.listenDone
	}
	if s.stopBackground != nil {
		s.stopBackground()
		<-s.sequencerDone
		<-s.usageFolderDone
		s.stopBackground = nil
	}
	s.pool.Close()
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return mapErr(s.pool.Ping(ctx))
}

// tx runs fn in one transaction, again when PostgreSQL aborted it for a
// serialization failure or a deadlock (another process's write came first;
// fn re-reads and decides again), at most a few times.
//
// Every write goes through here, so this is where a pending Idempotency-Key
// claim in ctx (repo.WithIdempotencyClaim) is recorded: first in the
// transaction, so it commits with the write or not at all. Only the first
// write of a request claims; appends, which keep keys of their own, never
// come here.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) (err error) {
	if c := repo.PendingClaim(ctx); c != nil {
		fp, write := c.Fingerprint(), fn // here: it may read the rest of the request's body
		fn = func(tx pgx.Tx) error {
			if err := claimIdempotencyKeyPG(ctx, tx, c, fp); err != nil {
				return err
			}
			return write(tx)
		}
		defer func() {
			if err == nil {
				c.Committed()
			}
		}()
	}
	for try := 0; ; try++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		if !retryable(err) || try == 8 {
			return mapErr(err)
		}
		time.Sleep(time.Duration(1+try*try) * time.Millisecond)
	}
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// mapErr turns a database error into a model error: unique violations are
// conflicts, a database that cannot be reached is unavailable (503, retry),
// model errors pass through.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var me *model.Error
	if errors.As(err, &me) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return &model.Error{Kind: model.KindConflict, Code: "conflict", Msg: "an object with this id already exists", Err: err}
		case pe.Code == "22021" || pe.Code == "22P05":
			// PostgreSQL's text cannot hold U+0000, which JSON can carry ("\u0000").
			return model.Invalid(model.FieldError{Field: "body",
				Message: "a text value contains U+0000 (NUL), which this server's database (PostgreSQL) cannot store; remove it"})
		case pe.Code[:2] == "08", pe.Code[:2] == "53", pe.Code[:2] == "57", pe.Code == "40001", pe.Code == "40P01":
			// connection, resources, operator intervention (a shutdown), contention
			return model.Unavailable(err)
		}
		return model.Internal(err)
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) || isConnErr(err) {
		return model.Unavailable(err)
	}
	return model.Internal(err)
}

// isConstraint reports a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// isConnErr reports an error of the connection rather than of the statement:
// the server went away (mid-statement: an EOF or a reset where an answer was
// due) or could not be reached.
func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne)
}

// newID makes a server-side id: the prefix and a UUIDv7 in hex, time-ordered
// like SQLite's.
func newID(prefix string) string {
	u, err := uuid.NewV7()
	if err != nil {
		var b [16]byte
		_, _ = rand.Read(b[:])
		return prefix + hex.EncodeToString(b[:])
	}
	return prefix + hex.EncodeToString(u[:])
}

var _ repo.Store = (*Store)(nil)
