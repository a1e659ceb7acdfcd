// Command loadtest measures Logbook's write and read speed on this machine against
// two baselines run beside it: a naive net/http + database/sql server with one
// durable transaction per request, and rows inserted straight into SQLite. With
// -pocketbase it also measures PocketBase's single record creates and 100-record
// pages beside Logbook's appends and pages. It measures NDJSON streaming appends
// (server CPU per message, against one request per message), and the context read
// that runs before every LLM call (GET …/context on a long, compacted session,
// beside a plain page). Last, it measures how much one tenant's ~1 MB appends slow
// another tenant's small ones (-fairness=false skips that). Before that, where
// PostgreSQL is installed, it runs the appends and pages on Logbook over a
// throwaway PostgreSQL cluster, with one server process and with two on one
// database, beside Logbook on SQLite (-postgres=false skips that).
//
//	make build && go run ./cmd/loadtest            # -server bin/logbook, the default
//	bash scripts/pocketbase.sh bin/pocketbase   # PocketBase from source, for -pocketbase bin/pocketbase
//
// Every server runs as its own process on a fresh temporary database, on
// 127.0.0.1 only; Logbook and the naive server with synchronous=FULL, PocketBase
// with its own SQLite settings. All of them are stopped and their files removed
// when the tool ends, also on error or Ctrl-C. docs/benchmarks.md explains the
// figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// sectionNames are the sections, in the order they run.
var sectionNames = []string{"appends", "stream", "batch", "paging", "context", "postgres", "fairness"}

type options struct {
	server        string
	duration      time.Duration
	rounds        int
	clients       int
	naiveMaxConns int
	batchClients  int
	batchRounds   int
	pagingFill    int
	pagingReps    int
	pagingClients int // concurrent clients of the page-read rounds
	pagingRounds  int
	streamRounds  int
	streamWindow  int // lines each stream sends at once
	// The context section's session and its reads.
	contextMessages int
	contextReps     int
	contextClients  int
	contextRounds   int
	// The postgres section's rounds, and its rounds on a cluster with fsync on.
	pgRounds      int
	pgFsyncRounds int
	postgres      bool
	pocketbase    string // PocketBase's binary, built by scripts/pocketbase.sh; "" skips it
	fairness      bool
	only          string // run this section alone
	fairnessDur   time.Duration
	jsonPath      string
	dir           string
	serverFlags   []string // extra flags for Logbook's server, e.g. --search-index=false
}

// env is what every measurement needs.
type env struct {
	opts      options
	serverBin string // Logbook's server binary
	self      string // this tool's binary, re-executed as the naive server
	pbBin     string // PocketBase's binary; "" without -pocketbase
	tmp       string
	client    *http.Client
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == naiveCmd {
		if err := naiveServe(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest naive-serve:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == floorCmd {
		if err := floorServe(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest floor-serve:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	interrupted := ctx.Err() != nil // read before stop, which cancels ctx too
	stop()
	if err != nil {
		if interrupted {
			err = fmt.Errorf("interrupted (%v); every server was stopped and the temporary files removed", err)
		}
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.StringVar(&o.server, "server", "bin/logbook", "path to the built Logbook binary (make build writes bin/logbook)")
	fs.Func("server-flag", "an extra flag for Logbook's server, repeatable (e.g. -server-flag=--search-index=false)", func(v string) error {
		o.serverFlags = append(o.serverFlags, v)
		return nil
	})
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "length of each timed round")
	fs.IntVar(&o.rounds, "rounds", 5, "logbook/naive pairs of single-append rounds, run alternately")
	fs.IntVar(&o.clients, "clients", 32, "concurrent clients in the single-append rounds")
	fs.IntVar(&o.naiveMaxConns, "naive-max-conns", 0, "naive server's connection pool size; 0 keeps database/sql's defaults (unlimited open, 2 idle)")
	fs.IntVar(&o.batchClients, "batch-clients", 4, "concurrent clients sending 1000-message batches")
	fs.IntVar(&o.batchRounds, "batch-rounds", 2, "API/direct pairs of batch rounds, run alternately")
	fs.IntVar(&o.pagingFill, "paging-messages", 50000, "messages in the paging test's session (a multiple of 1000)")
	fs.IntVar(&o.pagingReps, "paging-reps", 200, "timed reads of each page in the paging test")
	fs.IntVar(&o.pagingClients, "paging-clients", 8, "concurrent clients in the paging test's page-read rounds")
	fs.IntVar(&o.pagingRounds, "paging-rounds", 3, "page-read rounds (logbook/pocketbase pairs with -pocketbase)")
	fs.IntVar(&o.streamRounds, "stream-rounds", 2, "logbook/floor pairs of rounds of NDJSON streaming appends (with -clients streams)")
	fs.IntVar(&o.streamWindow, "stream-window", 16, "lines each stream sends at once before reading their answers (1: one message in flight)")
	fs.IntVar(&o.contextMessages, "context-messages", 10000, "messages in the context test's session, compacted through nine tenths of them")
	fs.IntVar(&o.contextReps, "context-reps", 200, "timed reads of each read in the context test, one client")
	fs.IntVar(&o.contextClients, "context-clients", 8, "concurrent clients in the context test's rounds")
	fs.IntVar(&o.contextRounds, "context-rounds", 2, "rounds of concurrent context reads (each read every round)")
	fs.IntVar(&o.pgRounds, "pg-rounds", 2, "rounds of the postgres section: single appends (sqlite, PostgreSQL with 1 and 2 processes), then page reads")
	fs.IntVar(&o.pgFsyncRounds, "pg-fsync-rounds", 1, "PostgreSQL append rounds on a second cluster with fsync on (0 skips them)")
	fs.BoolVar(&o.postgres, "postgres", true, "run Logbook on PostgreSQL beside SQLite where PostgreSQL is installed (-postgres=false skips it)")
	fs.StringVar(&o.pocketbase, "pocketbase", "", "also compare with PocketBase, this binary (build it with: bash scripts/pocketbase.sh)")
	fs.StringVar(&o.only, "only", "", "run one section alone: "+strings.Join(sectionNames, ", "))
	fs.BoolVar(&o.fairness, "fairness", true, "measure a small tenant's appends beside another's 1 MB appends (-fairness=false skips it)")
	fs.DurationVar(&o.fairnessDur, "fairness-duration", 15*time.Second, "length of each of the fairness test's two phases")
	fs.StringVar(&o.jsonPath, "json", "", "also write a JSON summary to this file")
	fs.StringVar(&o.dir, "dir", os.TempDir(), "where the temporary databases go (the fsync cost of its filesystem is part of every figure)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.server == "":
		return o, errors.New("-server PATH names Logbook's binary (build it with: make build, which writes bin/logbook)")
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.naiveMaxConns < 0:
		return o, errors.New("-naive-max-conns must not be negative")
	case o.duration <= 0 || o.rounds < 1 || o.clients < 1 || o.batchClients < 1 || o.batchRounds < 1 || o.pagingReps < 1 ||
		o.pagingClients < 1 || o.pagingRounds < 1 || o.streamRounds < 1 || o.streamWindow < 1 || o.contextReps < 1 || o.contextClients < 1 || o.contextRounds < 1 ||
		o.pgRounds < 1:
		return o, errors.New("-duration, -rounds, -clients, -batch-clients, -batch-rounds, -paging-reps, -paging-clients, -paging-rounds, " +
			"-stream-rounds, -stream-window, -context-reps, -context-clients, -context-rounds and -pg-rounds must be positive")
	case o.pgFsyncRounds < 0:
		return o, errors.New("-pg-fsync-rounds must not be negative")
	case o.only != "" && !slices.Contains(sectionNames, o.only):
		return o, fmt.Errorf("-only must be one of %s, not %q", strings.Join(sectionNames, ", "), o.only)
	case o.fairnessDur <= 0:
		return o, errors.New("-fairness-duration must be positive")
	case o.pagingFill < 2*batchSize:
		return o, fmt.Errorf("-paging-messages must be at least %d", 2*batchSize)
	case o.contextMessages < minContextMessages:
		return o, fmt.Errorf("-context-messages must be at least %d", minContextMessages)
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	opts, err := parseFlags(args)
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(opts.server)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		return fmt.Errorf("-server %s: not a file (build it with: make build, which writes bin/logbook)", opts.server)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var pbBin string
	if opts.pocketbase != "" {
		if pbBin, err = filepath.Abs(opts.pocketbase); err != nil {
			return err
		}
		if fi, err := os.Stat(pbBin); err != nil || fi.IsDir() {
			return fmt.Errorf("-pocketbase %s: not a file (build it with: bash scripts/pocketbase.sh %[1]s)", opts.pocketbase)
		}
	}
	tmp, err := os.MkdirTemp(opts.dir, "logbook-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e := &env{opts: opts, serverBin: bin, self: self, pbBin: pbBin, tmp: tmp, client: newClient()}
	defer e.client.CloseIdleConnections()

	flushDirty()
	rep := &report{Machine: describeMachine(tmp), Noisy: []string{}}
	if pbBin != "" {
		rep.PocketBase = &pocketbaseInfo{Binary: pbBin, Version: pbVersion(pbBin), BuiltBy: "scripts/pocketbase.sh",
			SQLite: pbSQLite, Logs: pbLogs}
	}
	rep.header(stdout, opts)
	sections := []struct {
		name string
		run  func(context.Context, *env, *report, io.Writer) error
	}{{"appends", appendsSection}, {"stream", streamSection}, {"batch", batchSection}, {"paging", pagingSection},
		{"context", contextSection}}
	if opts.postgres {
		sections = append(sections, struct {
			name string
			run  func(context.Context, *env, *report, io.Writer) error
		}{"postgres", postgresSection})
	}
	if opts.fairness {
		sections = append(sections, struct {
			name string
			run  func(context.Context, *env, *report, io.Writer) error
		}{"fairness", fairnessSection})
	}
	for _, section := range sections {
		if opts.only != "" && section.name != opts.only {
			continue
		}
		if err := section.run(ctx, e, rep, stdout); err != nil {
			return err
		}
	}
	rep.summary(stdout)
	if opts.jsonPath != "" {
		if err := os.WriteFile(opts.jsonPath, append(mustIndentJSON(rep), '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nJSON summary written to %s\n", opts.jsonPath)
	}
	return nil
}

// appendsSection alternates Logbook and naive rounds (and PocketBase's, with
// -pocketbase), so that a drift in the machine (another tenant of the host, the
// disk's write cache) hits them alike and the per-round ratios cancel it.
func appendsSection(ctx context.Context, e *env, rep *report, w io.Writer) error {
	rep.appendsHeader(w, e.opts)
	for i := 1; i <= e.opts.rounds; i++ {
		p := appendPair{Round: i}
		var err error
		if p.Logbook, err = appendRound(ctx, e, "logbook", i); err != nil {
			return err
		}
		rep.row(w, i, "logbook", p.Logbook)
		if p.Naive, err = appendRound(ctx, e, "naive", i); err != nil {
			return err
		}
		rep.row(w, i, "naive", p.Naive)
		st, err := appendRound(ctx, e, "floor", i)
		if err != nil {
			return err
		}
		p.Floor = &st
		rep.row(w, i, "floor", st)
		if e.pbBin != "" {
			st, err := appendRound(ctx, e, "pocketbase", i)
			if err != nil {
				return err
			}
			p.PocketBase = &st
			rep.row(w, i, "pocketbase", st)
		}
		rep.addAppendPair(w, p)
	}
	rep.appendsFooter(w)
	return nil
}

func batchSection(ctx context.Context, e *env, rep *report, w io.Writer) error {
	rep.batchHeader(w, e.opts)
	for i := 1; i <= e.opts.batchRounds; i++ {
		p := batchPair{Round: i}
		var err error
		if p.API, err = batchAPIRound(ctx, e, i); err != nil {
			return err
		}
		rep.row(w, i, "api", p.API)
		if p.Direct, err = batchDirectRound(ctx, e, i); err != nil {
			return err
		}
		rep.row(w, i, "direct", p.Direct)
		rep.addBatchPair(w, p)
	}
	rep.batchFooter(w)
	return nil
}

// pagingSection times the first and a deep page with one client, then pages/s
// and server CPU per page with several, on one filled session.
func pagingSection(ctx context.Context, e *env, rep *report, w io.Writer) error {
	srv, msgs, p, err := startPaging(ctx, e)
	if err != nil {
		return err
	}
	defer srv.stop()
	// Connections to a stopped server are of no further use.
	defer e.client.CloseIdleConnections()
	if err := pageLatencies(ctx, e, srv, msgs, &p); err != nil {
		return err
	}
	rep.setPaging(w, p)
	return pageReadsSection(ctx, e, rep, w, srv, msgs, p.Messages)
}

func fairnessSection(ctx context.Context, e *env, rep *report, w io.Writer) error {
	f, err := fairnessRun(ctx, e, fairnessConfig{duration: e.opts.fairnessDur})
	if err != nil {
		return err
	}
	rep.setFairness(w, f)
	return nil
}
