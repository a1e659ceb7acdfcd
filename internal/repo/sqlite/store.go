// Package repo is Logbook's storage: one SQLite file, one writer goroutine that owns
// the only read-write connection, and a pool of read-only connections for reads.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logbook/logbook/internal/repo"
	"modernc.org/sqlite" // also registers the "sqlite" driver (pure Go, no cgo)
)

// Config says where the database lives and how hard it syncs.
type Config struct {
	Path      string // database file; its directory is created if missing
	Sync      string // "full" (default: durable on power loss) or "normal"
	ReadConns int    // read pool size; 0 picks one from the CPU count
	Migrate   bool   // apply pending migrations on Open
	// MaxBatch caps how many queued writes share one transaction; 0 means 1000.
	MaxBatch int
	// Faults injects failures at named points; tests only. Nil in production.
	Faults *repo.Faults
	// NoMessageIndex turns conversation indexing off (search then finds only what
	// was indexed before); for deployments that do not search, and benchmarks.
	NoMessageIndex bool
	// NoSearch leaves the search index file alone: no indexer, and no search.
	// For the CLI, which works on a file that a server may be indexing.
	NoSearch bool
	// VectorCacheBytes bounds the passages' embeddings kept in memory for
	// searches by meaning; 0 means no bound.
	VectorCacheBytes int64
	// WALMaxBytes bounds the write-ahead log on disk (checkpointer.go): past
	// it the writer hands over for a RESTART checkpoint between two groups.
	// 0 means DefaultWALMaxBytes; negative, no bound (PASSIVE checkpoints only).
	WALMaxBytes int64

	// connect opens the database's connections (nil: the driver's own). The
	// cost guard (cost_test.go) counts statements through it.
	connect func(dsn string) (driver.Connector, error)
	// noUsageFolder leaves the usage rollups unfolded (reads add the tail)
	// unless a test folds them, so that a test sees the writer's groups
	// without the writer's folds.
	noUsageFolder bool
}

// Store is the storage handle. Its methods are safe for concurrent use.
type Store struct {
	wdb     *sql.DB // exactly one connection, used only by the writer goroutine
	rdb     *sql.DB // read-only pool (with the search index attached as idx)
	cdb     *sql.DB // one connection for WAL checkpoints (checkpointer.go)
	readDSN string  // how rdb's connections are opened, for one-off readers
	path    string

	stopCheckpoints chan struct{}
	checkpointsDone chan struct{}

	idb            *sql.DB // the search index file, used only by the indexer (nil with NoSearch)
	ist            indexerStatements
	indexWake      chan struct{} // the writer's "new messages" to the indexer
	stopIndexer    chan struct{} // nil when no indexer runs
	indexerDone    chan struct{}
	deletesApplied atomic.Int64 // index_deletes rows the indexer has applied
	lag            *lagBook     // per tenant, the messages the indexer has not reached (indexlag.go)
	lastCommit     atomic.Int64 // when the writer last committed (Unix ns), for the indexer
	inGroup        atomic.Bool  // the writer is running a group, for the checkpointer
	lastParts      struct {     // the indexer's alone (partsOf)
		gid   int64
		parts []string
	}

	// The usage fold (usagefold.go): usageFolded is its mark; foldsOn,
	// lastFold and usage are the writer's.
	usageFolded atomic.Int64
	foldsOn     bool
	lastFold    time.Time
	usage       usageAcc // the writer's: what its appends stored since the last fold

	queue  chan *writeOp
	events repo.EventSignal // the live feed's readers, woken after each commit of events
	// eventsWritten says that the writer's current group recorded events.
	eventsWritten bool
	mu            sync.RWMutex // guards closed against sends on a closed queue
	closed        bool
	writerDone    chan struct{}
	maxBatch      int
	stats         writerStats
	st            writerStatements // used only by the writer goroutine
	rst           readStatements   // prepared on the read pool
	faults        *repo.Faults
	vectors       *repo.VectorCache

	gid          int64        // the last gid handed out (messages, events, incarnations); the writer's alone
	feedSecret   []byte       // the live feed's ids are sealed with it (FeedSecret)
	sessions     sessionCache // the writer's record of sessions it appends to
	dataVersion  int64        // the writer's last PRAGMA data_version
	lineages     lineageCache // sessions' lineages, for reads
	lineageMoved bool         // this group may change a lineage: move lineages.epoch after it

	pendingCrash repo.FaultKind // a crash injected inside a write, applied at the group's commit

	runner       string                                // this process's name on the jobs it runs (jobs.go)
	observer     atomic.Pointer[observerBox]           // told of each group (metrics.go); nil: no one
	ckptObserver atomic.Pointer[checkpointObserverBox] // told of each checkpoint (metrics.go)
	wal          walBound                              // the writer's bound on the WAL (checkpointer.go)
	syncFull     bool                                  // synchronous=FULL: every commit fsyncs the WAL
}

// nextGID numbers a new message, event or session incarnation: one counter, so
// that the live feed's positions are the gids (events.go). Only the writer
// calls it, inside the transaction that uses the number; a rolled-back number
// is simply never used.
func (s *Store) nextGID() int64 {
	s.gid++
	return s.gid
}

// mmapSize lets reads of hot pages skip the read() syscall: measured ~1.7× faster
// 100-row message pages (DESIGN.md, Storage).
const mmapSize = 256 << 20

// Open opens (creating if needed) the database at cfg.Path, checks that it is in WAL
// mode, applies migrations when cfg.Migrate is set and starts the writer, the
// checkpointer and (unless told not to) the indexer.
func Open(ctx context.Context, cfg Config) (s *Store, err error) {
	if cfg.Path == "" {
		return nil, errors.New("repo: empty database path")
	}
	if dir := filepath.Dir(cfg.Path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("repo: create database directory: %w", err)
		}
	}
	sync := strings.ToUpper(cfg.Sync)
	switch sync {
	case "":
		sync = "FULL"
	case "FULL", "NORMAL":
	default:
		return nil, fmt.Errorf("repo: sync must be full or normal, not %q", cfg.Sync)
	}

	var opened []*sql.DB
	defer func() {
		if err != nil {
			for _, db := range opened {
				db.Close()
			}
		}
	}()
	open := func(db *sql.DB, err error) (*sql.DB, error) {
		if db != nil {
			opened = append(opened, db)
		}
		return db, err
	}

	walMax := cfg.WALMaxBytes
	switch {
	case walMax == 0:
		walMax = DefaultWALMaxBytes
	case walMax < 0:
		walMax = 0
	}
	// The writer's own pragmas: checkpoints run beside it (checkpointer.go),
	// the first commit after the log starts over cuts the file back to the
	// bound, and statement journals stay in memory instead of spilling to a
	// temp file.
	writerDSN := dsn(cfg.Path, false, sync) + "&_pragma=wal_autocheckpoint(0)&_pragma=temp_store(MEMORY)"
	if walMax > 0 {
		writerDSN += fmt.Sprintf("&_pragma=journal_size_limit(%d)", walMax)
	}
	connect := cfg.connect
	if connect == nil {
		connect = sqlite.NewConnector
	}
	openDSN := func(dsn string) (*sql.DB, error) {
		c, err := connect(dsn)
		if err != nil {
			return nil, err
		}
		return open(sql.OpenDB(c), nil)
	}
	wdb, err := openDSN(writerDSN)
	if err != nil {
		return nil, fmt.Errorf("repo: open writer: %w", err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	if err := checkWAL(ctx, wdb); err != nil {
		return nil, err
	}
	if cfg.Migrate {
		if err := MigrateUp(ctx, wdb); err != nil {
			return nil, err
		}
	}
	st, err := prepareWriterStatements(ctx, wdb)
	if err != nil {
		return nil, err
	}
	var lastGID, folded, dataVersion int64
	// The writer's first group must not take its own connection's opening
	// for another process's write (noticeOtherWriters).
	if err := st.dataVersion.QueryRowContext(ctx).Scan(&dataVersion); err != nil {
		return nil, fmt.Errorf("repo: read data_version: %w", err)
	}
	if err := st.maxGID.QueryRowContext(ctx).Scan(&lastGID); err != nil {
		return nil, fmt.Errorf("repo: read the last message number: %w", err)
	}
	if err := st.usageFolded.QueryRowContext(ctx).Scan(&folded); err != nil {
		return nil, fmt.Errorf("repo: read the usage rollups' progress: %w", err)
	}
	feedSecret, err := loadFeedSecret(ctx, wdb)
	if err != nil {
		return nil, fmt.Errorf("repo: read the live feed's secret: %w", err)
	}
	var index indexState
	var idb *sql.DB
	if !cfg.NoSearch {
		if idb, index, err = openSearchIndex(ctx, cfg.Path, wdb); err != nil {
			return nil, err
		}
		opened = append(opened, idb)
	}

	// The checkpoint connection's busy timeout is how long a RESTART waits
	// for readers while the writer waits for it.
	cdb, err := openDSN(dsnWait(cfg.Path, false, sync, restartWait))
	if err != nil {
		return nil, fmt.Errorf("repo: open checkpointer: %w", err)
	}
	cdb.SetMaxOpenConns(1)

	readDSN := dsn(cfg.Path, true, sync)
	var rdb *sql.DB
	if cfg.NoSearch {
		rdb, err = openDSN(readDSN)
	} else {
		var conn driver.Connector
		if conn, err = newReadConnector(connect, readDSN, searchIndexPath(cfg.Path)); err == nil {
			rdb, err = open(sql.OpenDB(conn), nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("repo: open readers: %w", err)
	}
	n := cfg.ReadConns
	if n <= 0 {
		n = max(4, 2*runtime.NumCPU())
	}
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)
	rdb.SetConnMaxIdleTime(0)
	if err := rdb.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("repo: ping readers: %w", err)
	}
	rst, err := prepareReadStatements(ctx, rdb)
	if err != nil {
		return nil, err
	}
	var ist indexerStatements
	if idb != nil { // tests and benchmarks drive the indexer's steps with NoMessageIndex
		if ist, err = prepareIndexerStatements(ctx, rdb, idb); err != nil {
			return nil, fmt.Errorf("repo: prepare the indexer's statements: %w", err)
		}
	}

	s = &Store{
		wdb:             wdb,
		rdb:             rdb,
		cdb:             cdb,
		idb:             idb,
		ist:             ist,
		readDSN:         readDSN,
		path:            cfg.Path,
		stopCheckpoints: make(chan struct{}),
		checkpointsDone: make(chan struct{}),
		indexWake:       make(chan struct{}, 1),
		foldsOn:         !cfg.noUsageFolder,
		queue:           make(chan *writeOp, 4096),
		writerDone:      make(chan struct{}),
		maxBatch:        cfg.MaxBatch,
		st:              st,
		rst:             rst,
		faults:          cfg.Faults,
		gid:             lastGID,
		dataVersion:     dataVersion,
		feedSecret:      feedSecret,
		sessions:        sessionCache{m: map[sessionKey]*sessionState{}},
		syncFull:        sync == "FULL",
		wal:             walBound{path: cfg.Path + "-wal", max: walMax},
		runner:          newID("run_"),
	}
	if s.maxBatch <= 0 {
		s.maxBatch = 1000
	}
	s.vectors = repo.NewVectorCache(s.loadVectors, cfg.VectorCacheBytes)
	s.deletesApplied.Store(index.deletesUpto)
	s.lag = newLagBook(index.nextGID)
	s.usageFolded.Store(folded)
	s.usage.restart(folded)
	if folded < lastGID {
		s.usage.invalidate() // messages stored before: the folder reads them back first
	}
	go s.runWriter()
	go s.runCheckpointer(s.stopCheckpoints, s.checkpointsDone)
	if idb != nil && !cfg.NoMessageIndex {
		s.stopIndexer, s.indexerDone = make(chan struct{}), make(chan struct{})
		go s.runIndexer(index)
	}
	return s, nil
}

// busyTimeout is how long a statement waits for a lock another connection
// holds (another process's writer, a checkpoint) before it fails.
const busyTimeout = 5 * time.Second

// dsn puts every pragma in the connection string so that each pooled connection
// gets them, not only the first one.
func dsn(path string, readOnly bool, sync string) string {
	return dsnWait(path, readOnly, sync, busyTimeout)
}

// dsnWait is dsn with another busy timeout. (The driver sorts the DSN's
// pragmas, so a second busy_timeout appended to a dsn would not reliably win.)
func dsnWait(path string, readOnly bool, sync string, busy time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", mmapSize))
	if readOnly {
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	} else {
		// The writer takes the write lock at BEGIN, so a second process (the CLI)
		// waits on busy_timeout instead of failing mid-transaction.
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

func checkWAL(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("repo: read journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("repo: journal_mode is %q, want wal (is the file on a filesystem without shared memory?)", mode)
	}
	return nil
}

// Ping reports whether the database answers a read.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.rdb.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return mapErr(err)
	}
	return nil
}

// Close stops taking writes, lets the writer finish every queued write, checkpoints
// the WAL into the main file and closes both pools.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.queue)
	s.mu.Unlock()
	<-s.writerDone
	close(s.stopCheckpoints)
	<-s.checkpointsDone
	if s.stopIndexer != nil {
		close(s.stopIndexer)
		<-s.indexerDone
	}

	var errs []error
	if _, err := s.wdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		errs = append(errs, fmt.Errorf("repo: checkpoint: %w", err))
	}
	errs = append(errs, s.rdb.Close(), s.cdb.Close(), s.wdb.Close())
	if s.idb != nil {
		errs = append(errs, s.idb.Close())
	}
	return errors.Join(errs...)
}

// IntegrityCheck runs PRAGMA integrity_check on the database file and on its
// search index file and returns the findings ("ok" when both are sound).
//
// It runs on a connection of its own, opened for it and closed after: a pooled
// read connection keeps FTS5's cached picture of the search index from its last
// read, PRAGMA integrity_check does not refresh that picture, and once the
// indexer has merged index segments the check would read a segment that is gone
// and report corruption that is not there.
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	var db *sql.DB
	if s.idb == nil {
		db = sql.OpenDB(mustConnector(s.readDSN))
	} else {
		conn, err := newReadConnector(sqlite.NewConnector, s.readDSN, searchIndexPath(s.path))
		if err != nil {
			return "", mapErr(err)
		}
		db = sql.OpenDB(conn)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return "", mapErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", mapErr(err)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n"), mapErr(rows.Err())
}

var _ repo.Store = (*Store)(nil)
