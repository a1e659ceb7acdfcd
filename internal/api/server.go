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
	Store        repo.Store
	Log          zerolog.Logger
	MaxBodyBytes int64  // request bodies past this answer 413
	Spec         []byte // openapi.yaml, served at /openapi.yaml
	// AllowOpen lets requests without a key act as the default tenant while no key
	// exists. Set it only when the server is reachable from loopback alone, or when
	// the operator said --insecure-no-auth.
	AllowOpen bool
	// RateLimit is each tenant's requests per second; 0 means no limit.
	RateLimit int
	// CheckpointKeep is how many checkpoints each session keeps; 0 means 100.
	CheckpointKeep int
	// BackupDir is where POST /v1/admin/backup writes; empty means a "backups"
	// directory next to the database file.
	BackupDir string
	// ImportMaxBytes bounds the body of POST /v1/sessions/import; 0 means 256 MiB.
	ImportMaxBytes int64
	// MaxFileBytes bounds an upload to POST /v1/files; 0 means 20 MiB.
	MaxFileBytes int64
	// Version is the build's version, reported by GET /healthz.
	Version string
	// StreamGrace is how long an export or import may take before its bytes
	// must keep up a minimum rate; 0 means 30s.
	StreamGrace time.Duration
	// EventsHeartbeat is how often a quiet live feed sends a comment, so that
	// proxies and clients know it is alive; 0 means 15s.
	EventsHeartbeat time.Duration
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
}

// Server holds the handlers' dependencies; it has no globals.
type Server struct {
	store   repo.Store
	log     zerolog.Logger
	maxBody int64
	spec    []byte
	open    *openMode
	rate    int
	router  *chi.Mux

	checkpointKeep int
	backupDir      string
	importMax      int64
	maxFile        int64
	version        string
	streamGrace    time.Duration
	ids            *requestIDs
	feed           *feed.Hub
	heartbeat      time.Duration
	closing        chan struct{} // closed by Close: live feeds end
	closeOnce      sync.Once
	cors           *corsPolicy
	requests       RequestObserver
	pprof          bool
	embeddings     Embeddings
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

		checkpointKeep: cfg.CheckpointKeep,
		backupDir:      cfg.BackupDir,
		importMax:      cfg.ImportMaxBytes,
		maxFile:        cfg.MaxFileBytes,
		version:        cfg.Version,
		streamGrace:    cfg.StreamGrace,
		ids:            newRequestIDs(),
		heartbeat:      cfg.EventsHeartbeat,
		closing:        make(chan struct{}),
		cors:           newCORSPolicy(cfg.CORSOrigins),
		requests:       cfg.Requests,
		pprof:          cfg.Pprof,
	}
	if s.streamGrace <= 0 {
		s.streamGrace = defaultStreamGrace
	}
	if s.heartbeat <= 0 {
		s.heartbeat = 15 * time.Second
	}
	if cfg.Store != nil {
		s.feed = feed.New(cfg.Store, feed.Options{Log: cfg.Log})
	}
	s.open = &openMode{allowed: cfg.AllowOpen}
	if cfg.Store != nil {
		s.open.has = cfg.Store.HasActiveKeys
	}
	if s.maxBody <= 0 {
		s.maxBody = 1 << 20
	}
	if s.importMax <= 0 {
		s.importMax = defaultImportMaxBytes
	}
	if s.maxFile <= 0 {
		s.maxFile = model.DefaultMaxFileBytes
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
