package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// config is everything the server reads from flags and LOGBOOK_* variables.
type config struct {
	Addr           string
	DB             string
	Sync           string
	MaxBodyBytes   int64
	BodyMemory     int64 // what large request bodies may hold at once (api.Config.BodyMemoryBytes)
	ImportMaxBytes int64 // largest body of POST /v1/sessions/import
	MaxFileBytes   int64 // largest upload to POST /v1/files
	LogLevel       string
	Migrate        bool
	RateLimit      int  // per tenant, requests per second; 0: none
	InsecureOpen   bool // allow open mode on a non-loopback address
	SearchIndex    bool // index messages for conversation search in idle time
	CheckpointKeep int  // checkpoints kept per session and namespace
	// CheckpointPolicy is --checkpoint-retention as given; CheckpointRetention
	// the default policy it (or CheckpointKeep) makes.
	CheckpointPolicy    string
	CheckpointRetention model.CheckpointRetention
	BackupDir           string // where POST /v1/admin/backup writes
	CPUProfile          string // write a CPU profile of the run here
	GCPercent           int    // the collector's target heap growth, in %; -1: off

	// ExpirySweep is how often the server erases what has passed its
	// expires_at; 0: never (POST /v1/admin/purge with expired still does).
	ExpirySweep time.Duration
	// EventsMaxStreams bounds the live feeds each tenant (or end user) holds open.
	EventsMaxStreams int
	// IdempotencyTTL is how long an Idempotency-Key is remembered.
	IdempotencyTTL time.Duration

	// CORSOrigins are the origins whose pages may call the API; none: no CORS.
	CORSOrigins []string

	MetricsAddr string // where GET /metrics listens, apart from the API; empty: nowhere
	Pprof       bool   // serve /debug/pprof to loopback clients

	// EmbeddingDefault is the endpoint that embeds the memory of agents that
	// name none (nil: none); EmbeddingAllowed the URL prefixes agents may name.
	EmbeddingDefault *model.EmbeddingConfig
	EmbeddingAllowed []string
	EmbeddingTimeout time.Duration
	// EmbeddingCalls bounds the worker's calls in flight, and
	// EmbeddingCallsPerEndpoint those to one endpoint (a tenant may have
	// half of EmbeddingCalls).
	EmbeddingCalls            int
	EmbeddingCallsPerEndpoint int

	VectorCacheBytes int64               // embeddings kept in memory for searches by meaning
	WALMaxBytes      int64               // SQLite's write-ahead log bound; 0: none
	PGVector         postgres.PGVector   // search passages through pgvector (PostgreSQL only)
	Getenv           func(string) string // run's, for the endpoints' keys
}

// globalFlags are the server's flags. They sit on the root command and, being
// persistent, every sub-command accepts them too, before or after its name. A
// flag given on the command line wins over its variable, the variable over the
// default; getenv is run's, so that callers (tests) decide what the environment is.
func globalFlags(getenv func(string) string) []cli.Flag {
	env := func(key string) cli.ValueSourceChain {
		return cli.NewValueSourceChain(envVar{key: key, getenv: getenv})
	}
	return []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8080", Sources: env("LOGBOOK_ADDR"),
			Usage: "address to listen on, as `HOST:PORT`"},
		&cli.StringFlag{Name: "db", Value: "data/logbook.db", Sources: env("LOGBOOK_DB"), TakesFile: true,
			Usage: "`DB`: a SQLite file (serving creates it and its directory, other commands need it to exist), or a PostgreSQL URL (postgres://user@host:5432/db)"},
		&cli.StringFlag{Name: "sync", Value: "full", Sources: env("LOGBOOK_SYNC"),
			Usage: "full survives power loss; normal is faster and survives a process crash"},
		&cli.Int64Flag{Name: "wal-max-bytes", Value: sqlite.DefaultWALMaxBytes, Sources: env("LOGBOOK_WAL_MAX_BYTES"),
			Usage: "SQLite: past this size the write-ahead log is checkpointed and started over between two groups of writes (appends wait for it, ~0.1 s); 0: no bound"},
		&cli.StringFlag{Name: "log-level", Value: "info", Sources: env("LOGBOOK_LOG_LEVEL"),
			Usage: "debug, info, warn or error"},
		&cli.Int64Flag{Name: "max-body-bytes", Value: 1 << 20, Sources: env("LOGBOOK_MAX_BODY_BYTES"),
			Usage: "largest body of the routes that carry no message, state or long text (sessions, keys, searches …), and a floor under every route's own limit, which admits its largest legal object however escaped (docs/operations.md); larger answers 413"},
		&cli.Int64Flag{Name: "body-memory-bytes", Value: api.DefaultBodyMemoryBytes, Sources: env("LOGBOOK_BODY_MEMORY_BYTES"),
			Usage: "most bytes that request bodies may hold beyond --max-body-bytes at once, all tenants together (each tenant half of it); past it a request is refused with 429 and Retry-After"},
		&cli.Int64Flag{Name: "import-max-bytes", Value: 256 << 20, Sources: env("LOGBOOK_IMPORT_MAX_BYTES"),
			Usage: "largest session import in bytes; larger answers 413"},
		&cli.Int64Flag{Name: "max-file-bytes", Value: 20 << 20, Sources: env("LOGBOOK_MAX_FILE_BYTES"),
			Usage: "largest file upload (POST /v1/files) in bytes, larger answers 413; also what one request's inline data: URLs may hold decoded (422 past it)"},
		// Help shows no default for a boolean flag unless told: these two are true.
		&cli.BoolFlag{Name: "migrate", Value: true, DefaultText: "true", Sources: env("LOGBOOK_MIGRATE"),
			Usage: "apply pending migrations at start; with --migrate=false, run migrate up yourself"},
		&cli.IntFlag{Name: "rate-limit", Sources: env("LOGBOOK_RATE_LIMIT"),
			Usage: "each tenant's requests per second; 0 means no limit"},
		&cli.BoolFlag{Name: "insecure-no-auth", Sources: env("LOGBOOK_INSECURE_NO_AUTH"),
			Usage: "serve without API keys on a non-loopback address"},
		&cli.IntFlag{Name: "checkpoint-keep", Value: 100, Sources: env("LOGBOOK_CHECKPOINT_KEEP"),
			Usage: "checkpoints kept per session and namespace by default (a session's own policy wins); older ones are pruned"},
		&cli.StringFlag{Name: "checkpoint-retention", Sources: env("LOGBOOK_CHECKPOINT_RETENTION"), DefaultText: "last:N of --checkpoint-keep",
			Usage: "the default checkpoint `POLICY` for sessions without their own: all, last:N, or younger_than:DURATION (72h); replaces --checkpoint-keep"},
		&cli.StringFlag{Name: "backup-dir", Sources: env("LOGBOOK_BACKUP_DIR"), TakesFile: true,
			DefaultText: "backups beside the database file",
			Usage:       "`DIR` that POST /v1/admin/backup writes to"},
		&cli.BoolFlag{Name: "search-index", Value: true, DefaultText: "true", Sources: env("LOGBOOK_SEARCH_INDEX"),
			Usage: "index messages for conversation search, beside the writer, into DB-search"},
		&cli.DurationFlag{Name: "expiry-sweep", Value: time.Minute, Sources: env("LOGBOOK_EXPIRY_SWEEP"),
			Usage: "how often to erase every tenant's sessions and archival passages past their expires_at (a `DURATION` such as 30s or 1h); 0 turns the sweep off"},
		&cli.DurationFlag{Name: "idempotency-ttl", Value: 24 * time.Hour, Sources: env("LOGBOOK_IDEMPOTENCY_TTL"),
			Usage: "how long an Idempotency-Key of a write other than an append is remembered (a `DURATION`, at least 1m): a retry within it gets the first answer; the expiry sweep deletes older keys"},
		&cli.IntFlag{Name: "events-max-streams", Value: 256, Sources: env("LOGBOOK_EVENTS_MAX_STREAMS"),
			Usage: "live feeds one tenant (one end user of it, for a key bound to a user) may hold open at once; past it a new feed is 429"},
		&cli.StringFlag{Name: "cors-origins", Sources: env("LOGBOOK_CORS_ORIGINS"), DefaultText: "none: no CORS headers",
			Usage: "comma-separated `ORIGINS` (https://dash.example.com) whose pages may call the API from a browser; * allows every origin and is refused in open mode"},
		&cli.StringFlag{Name: "metrics-addr", Sources: env("LOGBOOK_METRICS_ADDR"), DefaultText: "none: no metrics",
			Usage: "serve Prometheus metrics at GET /metrics on a listener of their own, `HOST:PORT`, apart from the API (docs/operations.md)"},
		&cli.BoolFlag{Name: "pprof", Sources: env("LOGBOOK_PPROF"),
			Usage: "serve Go's profiler at /debug/pprof on --addr, to loopback clients only"},
		&cli.StringFlag{Name: "embedding-url", Sources: env("LOGBOOK_EMBEDDING_URL"), DefaultText: "none: only clients' embeddings",
			Usage: "OpenAI-compatible embeddings `URL` (http://127.0.0.1:11434/v1/embeddings) that embeds the passages and messages of agents naming no endpoint of their own; its key, if any, in LOGBOOK_EMBEDDING_KEY"},
		&cli.StringFlag{Name: "embedding-model", Sources: env("LOGBOOK_EMBEDDING_MODEL"),
			Usage: "the model --embedding-url is asked for (required with it)"},
		&cli.IntFlag{Name: "embedding-dims", Sources: env("LOGBOOK_EMBEDDING_DIMS"),
			Usage: "dimensions asked of --embedding-url (0: the model's own)"},
		&cli.StringFlag{Name: "embedding-allowed-urls", Sources: env("LOGBOOK_EMBEDDING_ALLOWED_URLS"), DefaultText: "--embedding-url",
			Usage: "comma-separated URL prefixes an agent's own embedding endpoint may start with (the server calls them for the tenant, sending LOGBOOK_EMBEDDING_KEY_<TENANT> as its key if the endpoint names it); compared in canonical form, path segment by segment"},
		&cli.DurationFlag{Name: "embedding-timeout", Value: 30 * time.Second, Sources: env("LOGBOOK_EMBEDDING_TIMEOUT"),
			Usage: "how long one call to an embedding endpoint may take before it is retried"},
		&cli.IntFlag{Name: "embedding-calls", Value: 8, Sources: env("LOGBOOK_EMBEDDING_CALLS"),
			Usage: "calls to embedding endpoints in flight at once, in all; one tenant may have half of them"},
		&cli.IntFlag{Name: "embedding-calls-per-endpoint", Value: 2, Sources: env("LOGBOOK_EMBEDDING_CALLS_PER_ENDPOINT"),
			Usage: "calls in flight at once to one endpoint URL: an endpoint that never answers holds no more than these"},
		&cli.Int64Flag{Name: "vector-cache-bytes", Value: 1 << 30, Sources: env("LOGBOOK_VECTOR_CACHE_BYTES"),
			Usage: "memory for the embeddings searched by meaning (about 3.2 KB per 768-d vector); past it the agents searched least recently are dropped, and loaded again on their next search"},
		&cli.StringFlag{Name: "pgvector", Value: "auto", Sources: env("LOGBOOK_PGVECTOR"),
			Usage: "on PostgreSQL, search passages by meaning through the pgvector extension's HNSW index: auto (when the server has it), on (refuse to start without it) or off (the in-memory search)"},
		&cli.StringFlag{Name: "cpu-profile", Sources: env("LOGBOOK_CPU_PROFILE"), TakesFile: true,
			Usage: "write a CPU profile of the whole run to `FILE` (go tool pprof FILE); make profile uses it"},
		// Go's own GOGC is this flag's variable, so that an operator who knows it
		// gets what it says, and the server a default chosen by measurement:
		// docs/benchmarks.md shows pages at ~0.7 of the CPU with 400 over Go's 100.
		&cli.StringFlag{Name: "gc-percent", Value: "400", Sources: env("GOGC"),
			Usage: "heap growth, in %, that starts a garbage collection (as GOGC; off disables it)"},
	}
}

// configFrom reads the global flags of a parsed command line and checks what the
// flag types cannot: ranges and enumerations. Malformed numbers and booleans were
// refused while parsing, with the flag's (or the variable's) name.
func configFrom(cmd *cli.Command) (config, error) {
	c := config{
		Addr:             cmd.String("addr"),
		DB:               cmd.String("db"),
		Sync:             strings.ToLower(cmd.String("sync")),
		LogLevel:         cmd.String("log-level"),
		MaxBodyBytes:     cmd.Int64("max-body-bytes"),
		BodyMemory:       cmd.Int64("body-memory-bytes"),
		ImportMaxBytes:   cmd.Int64("import-max-bytes"),
		MaxFileBytes:     cmd.Int64("max-file-bytes"),
		Migrate:          cmd.Bool("migrate"),
		RateLimit:        cmd.Int("rate-limit"),
		InsecureOpen:     cmd.Bool("insecure-no-auth"),
		CheckpointKeep:   cmd.Int("checkpoint-keep"),
		CheckpointPolicy: cmd.String("checkpoint-retention"),
		BackupDir:        cmd.String("backup-dir"),
		SearchIndex:      cmd.Bool("search-index"),
		CPUProfile:       cmd.String("cpu-profile"),
		MetricsAddr:      cmd.String("metrics-addr"),
		Pprof:            cmd.Bool("pprof"),
		ExpirySweep:      cmd.Duration("expiry-sweep"),
		EventsMaxStreams: cmd.Int("events-max-streams"),
		IdempotencyTTL:   cmd.Duration("idempotency-ttl"),
	}
	if c.DB == "" {
		return c, fmt.Errorf("db must name a file")
	}
	if c.MaxBodyBytes < 1 {
		return c, fmt.Errorf("max-body-bytes must be a positive integer, not %d", c.MaxBodyBytes)
	}
	if c.BodyMemory < 1 {
		return c, fmt.Errorf("body-memory-bytes must be a positive integer, not %d", c.BodyMemory)
	}
	if c.ImportMaxBytes < 1 {
		return c, fmt.Errorf("import-max-bytes must be a positive integer, not %d", c.ImportMaxBytes)
	}
	if c.MaxFileBytes < 1 {
		return c, fmt.Errorf("max-file-bytes must be a positive integer, not %d", c.MaxFileBytes)
	}
	if c.RateLimit < 0 {
		return c, fmt.Errorf("rate-limit must be a non-negative integer, not %d", c.RateLimit)
	}
	if c.IdempotencyTTL < time.Minute {
		return c, fmt.Errorf("idempotency-ttl must be a duration of at least 1m, not %s", c.IdempotencyTTL)
	}
	if c.EventsMaxStreams < 1 {
		return c, fmt.Errorf("events-max-streams must be a positive integer, not %d", c.EventsMaxStreams)
	}
	if c.ExpirySweep < 0 {
		return c, fmt.Errorf("expiry-sweep must be a duration of 0 or more, not %s", c.ExpirySweep)
	}
	if c.CheckpointKeep < 1 {
		return c, fmt.Errorf("checkpoint-keep must be at least 1, not %d", c.CheckpointKeep)
	}
	ret, err := parseRetention(c.CheckpointPolicy, c.CheckpointKeep)
	if err != nil {
		return c, err
	}
	c.CheckpointRetention = ret
	if c.BackupDir == "" {
		c.BackupDir = filepath.Join(filepath.Dir(c.DB), "backups")
	}
	gc, err := parseGCPercent(cmd.String("gc-percent"))
	if err != nil {
		return c, err
	}
	c.GCPercent = gc
	if c.CORSOrigins, err = parseCORSOrigins(cmd.String("cors-origins")); err != nil {
		return c, err
	}
	if c.WALMaxBytes = cmd.Int64("wal-max-bytes"); c.WALMaxBytes < 0 {
		return c, fmt.Errorf("wal-max-bytes must not be negative, not %d", c.WALMaxBytes)
	}
	if c.VectorCacheBytes = cmd.Int64("vector-cache-bytes"); c.VectorCacheBytes < 0 {
		return c, fmt.Errorf("vector-cache-bytes must not be negative, not %d", c.VectorCacheBytes)
	}
	if c.PGVector, err = postgres.ParsePGVector(cmd.String("pgvector")); err != nil {
		return c, err
	}
	if err := embeddingConfig(cmd, &c); err != nil {
		return c, err
	}
	if c.Sync != "full" && c.Sync != "normal" {
		return c, fmt.Errorf("sync must be full or normal, not %q", c.Sync)
	}
	return c, nil
}

// parseGCPercent reads GOGC's syntax: a non-negative integer, or off.
func parseGCPercent(v string) (int, error) {
	if strings.EqualFold(v, "off") {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("gc-percent must be a non-negative integer or off, not %q", v)
	}
	return n, nil
}

// envVar is a flag's environment twin, read through run's getenv instead of
// os.Getenv. It reports itself as an environment source, so that help prints
// [$LOGBOOK_…] beside the flag as it does for cli.EnvVars.
type envVar struct {
	key    string
	getenv func(string) string
}

// Lookup treats an empty variable as unset: LOGBOOK_DB= in a compose file means
// "not configured", not a file with an empty name. So did the old flag code.
func (e envVar) Lookup() (string, bool) {
	v := e.getenv(e.key)
	return v, v != ""
}

func (e envVar) String() string   { return fmt.Sprintf("environment variable %q", e.key) }
func (e envVar) GoString() string { return fmt.Sprintf("envVar{key: %q}", e.key) }
func (e envVar) IsFromEnv() bool  { return true }
func (e envVar) Key() string      { return e.key }

// parseRetention reads --checkpoint-retention: all, last:N or
// younger_than:DURATION; none is last:keep (--checkpoint-keep).
func parseRetention(s string, keep int) (model.CheckpointRetention, error) {
	kind, arg, _ := strings.Cut(strings.TrimSpace(s), ":")
	bad := fmt.Errorf("checkpoint-retention must be all, last:N (N at least 1) or younger_than:DURATION (such as 72h), not %q", s)
	switch kind {
	case "":
		return model.KeepLastN(int64(keep)), nil
	case model.KeepAll:
		if arg != "" {
			return model.CheckpointRetention{}, bad
		}
		return model.CheckpointRetention{Keep: model.KeepAll}, nil
	case model.KeepLast:
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || n < 1 {
			return model.CheckpointRetention{}, bad
		}
		return model.KeepLastN(n), nil
	case model.KeepYoungerThan:
		d, err := time.ParseDuration(arg)
		if err != nil || d < time.Second {
			return model.CheckpointRetention{}, bad
		}
		secs := int64(d / time.Second)
		return model.CheckpointRetention{Keep: model.KeepYoungerThan, MaxAgeSeconds: &secs}, nil
	}
	return model.CheckpointRetention{}, bad
}
