// Package api is Logbook's HTTP layer: it decodes and validates requests, calls one
// repo method, and encodes the answer or a problem+json error.
package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/jobs"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/rs/zerolog"
)

// Config is what the HTTP layer needs from the outside.
type Config struct {
	Store repo.Store
	Log   zerolog.Logger
	// MaxBodyBytes is the body limit of the routes that carry no large
	// object, and a floor under the others' (bodylimits.go); 0 means 1 MiB.
	MaxBodyBytes int64
	// BodyMemoryBytes bounds what request bodies hold beyond MaxBodyBytes at
	// once, all tenants together (each may hold half); 0 means 256 MiB.
	BodyMemoryBytes int64
	Spec            []byte // openapi.yaml, served at /openapi.yaml
	// AllowOpen lets requests without a key act as the default tenant while no key
	// exists. Set it only when the server is reachable from loopback alone, or when
	// the operator said --insecure-no-auth.
	AllowOpen bool
	// RateLimit is each tenant's requests per second; 0 means no limit.
	RateLimit int
	// CheckpointKeep is how many checkpoints of each namespace a session keeps
	// when it has no retention policy of its own; 0 means 100.
	// CheckpointRetention, when set, is that default policy instead.
	CheckpointKeep      int
	CheckpointRetention model.CheckpointRetention
	// BackupDir is where POST /v1/admin/backup writes; empty means a "backups"
	// directory next to the database file.
	BackupDir string
	// ImportMaxBytes bounds the body of POST /v1/sessions/import; 0 means 256 MiB.
	ImportMaxBytes int64
	// MaxFileBytes bounds an upload to POST /v1/files, and what one
	// request's inline data: URLs hold decoded; 0 means 20 MiB.
	MaxFileBytes int64
	// MaxInflatedPage bounds what a page of messages holds of inline data
	// (api/inline.go); 0 means 64 MiB.
	MaxInflatedPage int64
	// Version is the build's version, reported by GET /healthz.
	Version string
	// StreamGrace is how long an export or import may take before its bytes
	// must keep up a minimum rate; 0 means 30s.
	StreamGrace time.Duration
	// EventsHeartbeat is how often a quiet live feed sends a comment, so that
	// proxies and clients know it is alive; 0 means 15s.
	EventsHeartbeat time.Duration
	// EventsRecheck bounds how long a live feed goes on once its reader may
	// no longer read it (a revoked key, a purged session, …): each stream
	// checks again at least this often, and ends when the answer changed;
	// 0 means 2s.
	EventsRecheck time.Duration
	// EventsWriteTimeout is how long one write to a live feed's client may
	// block before the stream is cut (the client resumes with
	// Last-Event-ID); 0 means 30s.
	EventsWriteTimeout time.Duration
	// EventsBatchBytes bounds the events a stream holds at once (one event
	// when a single event is larger); 0 means 256 KiB.
	EventsBatchBytes int
	// EventsMaxStreams bounds the live feeds one tenant (one end user of it,
	// for a key bound to a user) holds open at once; past it a new feed is
	// 429. 0 means 256.
	EventsMaxStreams int
	// CORSOrigins are the origins (scheme://host[:port], or "*" for any) whose
	// pages may call the API from a browser; none, the default, sends no CORS
	// header at all.
	CORSOrigins []string
	// Requests is told of every answered request, by route pattern (metrics);
	// nil: no one.
	Requests RequestObserver
	// Pprof serves /debug/pprof, to loopback clients only (pprof.go).
	Pprof bool
	// Embeddings is the server-computed embeddings' configuration; its zero
	// value computes none.
	Embeddings Embeddings
	// IdempotencyTTL is how long an Idempotency-Key is remembered; 0 means
	// 24h (the expiry sweep deletes older keys: expiry.Sweeper).
	IdempotencyTTL time.Duration
	// JobWait is how long a purge, an integrity check or a backup is waited
	// for before its route answers 202 with the job; 0 means 20s.
	JobWait time.Duration
	// JobLimits bound the jobs that run at once (jobs.Limits' defaults when 0).
	JobLimits jobs.Limits
}

// Embeddings is how the server computes embeddings.
type Embeddings struct {
	// Default is the endpoint for agents that name none; nil: none.
	Default *model.EmbeddingConfig
	// AllowedURLs are the URL prefixes an agent's endpoint may start with:
	// the server calls them, so tenants must not point it anywhere else.
	AllowedURLs []string
	// Query embeds a search's q for modes vector and hybrid; nil: such a
	// search needs query_embedding.
	Query QueryEmbedder
	// Wake tells the embedding worker there is work; nil: no worker.
	Wake func()
}

// QueryEmbedder embeds a search's query text (embed.Query).
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, tenant, agentID, text string) ([]float32, error)
	// EmbedItemsQuery embeds a search's query for the tenant's items, and
	// names the model that made the vector.
	EmbedItemsQuery(ctx context.Context, tenant, text string) ([]float32, string, error)
}

// Server holds the handlers' dependencies; it has no globals.
type Server struct {
	store   repo.Store
	log     zerolog.Logger
	maxBody int64
	limits  map[routeKey]int64 // bodyLimits with maxBody as a floor
	bodies  *bodyMemory
	spec    []byte
	open    *openMode
	rate    int
	router  *chi.Mux

	checkpointKeep model.CheckpointRetention
	backupDir      string
	importMax      int64
	maxFile        int64
	inflatedPage   int64
	version        string
	streamGrace    time.Duration
	ids            *requestIDs
	feed           *feed.Hub
	feedIDs        *feed.IDs // nil, with feedIDsErr, when the store's secret is unusable
	feedIDsErr     error
	heartbeat      time.Duration
	recheck        time.Duration
	writeTimeout   time.Duration
	batchBytes     int
	feeds          feedSlots
	closing        chan struct{} // closed by Close: live feeds end
	closeOnce      sync.Once
	cors           *corsPolicy
	requests       RequestObserver
	pprof          bool
	embeddings     Embeddings
	idempotencyTTL time.Duration
	keysInFlight   keysInFlight
	itemOps        ItemObserver // nil: nobody counts
	jobs           *jobs.Runner
	jobWait        time.Duration
}

// New builds the server and its router.
func New(cfg Config) *Server {
	s := &Server{
		embeddings: cfg.Embeddings,
		store:      cfg.Store,
		log:        cfg.Log,
		maxBody:    cfg.MaxBodyBytes,
		spec:       cfg.Spec,
		rate:       cfg.RateLimit,

		checkpointKeep: cfg.CheckpointRetention.Or(model.KeepLastN(int64(cfg.CheckpointKeep))),
		backupDir:      cfg.BackupDir,
		importMax:      cfg.ImportMaxBytes,
		maxFile:        cfg.MaxFileBytes,
		inflatedPage:   cfg.MaxInflatedPage,
		version:        cfg.Version,
		streamGrace:    cfg.StreamGrace,
		ids:            newRequestIDs(),
		heartbeat:      cfg.EventsHeartbeat,
		recheck:        cfg.EventsRecheck,
		writeTimeout:   cfg.EventsWriteTimeout,
		batchBytes:     cfg.EventsBatchBytes,
		closing:        make(chan struct{}),
		cors:           newCORSPolicy(cfg.CORSOrigins),
		requests:       cfg.Requests,
		pprof:          cfg.Pprof,
		idempotencyTTL: cfg.IdempotencyTTL,
	}
	if s.idempotencyTTL <= 0 {
		s.idempotencyTTL = defaultIdempotencyTTL
	}
	s.itemOps, _ = cfg.Requests.(ItemObserver)
	if s.streamGrace <= 0 {
		s.streamGrace = defaultStreamGrace
	}
	if s.heartbeat <= 0 {
		s.heartbeat = 15 * time.Second
	}
	if s.recheck <= 0 {
		s.recheck = defaultEventsRecheck
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = defaultEventsWriteTimeout
	}
	s.feeds.max = cfg.EventsMaxStreams
	if s.feeds.max <= 0 {
		s.feeds.max = defaultEventsMaxStreams
	}
	if s.batchBytes <= 0 {
		s.batchBytes = feed.DefaultBatchBytes
	}
	if cfg.Store != nil {
		s.feed = feed.New(cfg.Store, feed.Options{Log: cfg.Log})
		s.feedIDs, s.feedIDsErr = feed.NewIDs(cfg.Store.FeedSecret())
	}
	s.open = &openMode{allowed: cfg.AllowOpen}
	if cfg.Store != nil {
		s.open.has = cfg.Store.HasActiveKeys
	}
	if s.maxBody <= 0 {
		s.maxBody = 1 << 20
	}
	if s.maxFile <= 0 {
		s.maxFile = model.DefaultMaxFileBytes
	}
	if s.inflatedPage <= 0 {
		s.inflatedPage = maxInflatedPage
	}
	s.limits = newBodyLimits(s.maxBody, s.maxFile)
	s.bodies = newBodyMemory(cfg.BodyMemoryBytes)
	if s.importMax <= 0 {
		s.importMax = defaultImportMaxBytes
	}
	if cfg.Store != nil {
		s.jobs = jobs.New(cfg.Store, jobError, cfg.JobLimits)
	}
	s.jobWait = cfg.JobWait
	if s.jobWait <= 0 {
		s.jobWait = defaultJobWait
	}
	s.router = s.routes()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// Close ends the live feeds being served, each after the events it has
// written, so that http.Server.Shutdown does not wait on streams that never
// go idle (register it with RegisterOnShutdown). Other requests are not
// touched.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
}
