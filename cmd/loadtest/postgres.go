package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// pgCluster is a throwaway PostgreSQL cluster and what the section reads of it.
type pgCluster struct {
	*pgtest.Cluster
	durable bool // fsync and full_page_writes on
	cpu     cpuReader
	version string
}

// startCluster starts a cluster and the way to read its CPU: the postmaster's
// and its children's, since every backend is a process of its own. The caller
// stops it, on every path.
func startCluster(ctx context.Context, durable bool) (*pgCluster, error) {
	c, err := pgtest.NewWith(pgtest.Options{Durable: durable})
	if err != nil {
		return nil, err
	}
	pc := &pgCluster{Cluster: c, durable: durable}
	fail := func(err error) (*pgCluster, error) {
		_ = c.Stop()
		return nil, err
	}
	// postmaster.pid's first line is the postmaster's pid.
	b, err := os.ReadFile(filepath.Join(c.Dir, "postmaster.pid"))
	if err != nil {
		return fail(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return fail(fmt.Errorf("postmaster.pid: %w", err))
	}
	pc.cpu = func() (time.Duration, error) { return treeCPU(pid) }
	if err := pc.exec(ctx, "SHOW server_version", &pc.version); err != nil {
		return fail(err)
	}
	return pc, nil
}

// exec runs one statement on the postgres database, scanning its one value
// into dst when dst is not nil.
func (c *pgCluster) exec(ctx context.Context, sql string, dst *string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if dst != nil {
		return conn.QueryRow(ctx, sql).Scan(dst)
	}
	_, err = conn.Exec(ctx, sql)
	return err
}

// createDB makes an empty database, so that each round starts on one as the
// SQLite rounds do on a fresh file, and returns its URL.
func (c *pgCluster) createDB(ctx context.Context, name string) (string, error) {
	db := strings.ReplaceAll(name, "-", "_")
	if err := c.exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize(), nil); err != nil {
		return "", fmt.Errorf("create database %s: %w", db, err)
	}
	return c.URL(db), nil
}

// stopCluster stops c and says so if that failed: the cluster would be left
// running, which the user must know of.
func stopCluster(c *pgCluster, w io.Writer) {
	if err := c.Stop(); err != nil {
		fmt.Fprintf(w, "warning: stopping the PostgreSQL cluster in %s failed: %v\n", c.Dir, err)
	}
}

// startLogbooks starts n Logbook servers on the database url. The caller stops
// them, also when it gets an error: those started by then are in the slice.
func startLogbooks(ctx context.Context, e *env, url, name string, n int) ([]*server, error) {
	var srvs []*server
	// One after another: each runs the migrations at start, and the first
	// has applied them when the next one looks.
	for i := range n {
		s, err := startLogbookOn(ctx, e.serverBin, e.tmp, url, fmt.Sprintf("%s-p%d", name, i+1), e.opts.serverFlags...)
		if err != nil {
			return srvs, err
		}
		srvs = append(srvs, s)
	}
	return srvs, nil
}

func stopAll(srvs []*server) {
	for _, s := range srvs {
		s.stop()
	}
}

// pgAppendRound is appendRound on a fresh database of c, with the clients
// spread over procs Logbook processes.
func pgAppendRound(ctx context.Context, e *env, c *pgCluster, procs, round int) (stats, error) {
	name := fmt.Sprintf("pg%d-r%d", procs, round)
	if c.durable {
		name = fmt.Sprintf("pg%d-fsync-r%d", procs, round)
	}
	url, err := c.createDB(ctx, name)
	if err != nil {
		return stats{}, err
	}
	srvs, err := startLogbooks(ctx, e, url, name, procs)
	defer stopAll(srvs)
	// Connections to a stopped server are of no further use.
	defer e.client.CloseIdleConnections()
	if err != nil {
		return stats{}, err
	}
	op, err := appendOp(ctx, e, srvs, name)
	if err != nil {
		return stats{}, err
	}
	return timeAppends(ctx, e, name, srvs, c.cpu, op)
}

// postgresSection sets Logbook on PostgreSQL, one process and two on one
// database, beside Logbook on SQLite: single appends in rounds that run the
// three in turn, so that a drift of the machine hits them alike; then the
// paging measurements on one PostgreSQL-backed process beside SQLite's.
func postgresSection(ctx context.Context, e *env, rep *report, w io.Writer) error {
	c, err := startCluster(ctx, false)
	if errors.Is(err, pgtest.ErrMissing) {
		rep.Postgres = &postgresReport{Skipped: err.Error()}
		fmt.Fprintf(w, "\n(h) PostgreSQL beside SQLite: skipped, %v\n", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("postgres: start a cluster: %w", err)
	}
	defer stopCluster(c, w)
	rep.postgresHeader(w, e.opts, c)
	rep.Postgres.clusters = append(rep.Postgres.clusters, c.Dir)
	for i := 1; i <= e.opts.pgRounds; i++ {
		r := pgAppendPair{Round: i}
		st, err := appendRound(ctx, e, "logbook", i)
		if err != nil {
			return err
		}
		r.SQLite = &st
		if r.OneProcess, err = pgAppendRound(ctx, e, c, 1, i); err != nil {
			return err
		}
		if r.TwoProcesses, err = pgAppendRound(ctx, e, c, 2, i); err != nil {
			return err
		}
		rep.addPGAppendRound(w, r, false)
	}
	if e.opts.pgFsyncRounds > 0 {
		if err := fsyncRounds(ctx, e, rep, w); err != nil {
			return err
		}
	}
	rep.pgAppendsFooter(w)
	return pgPaging(ctx, e, rep, w, c)
}

// fsyncRounds runs the PostgreSQL append rounds again on a second
// cluster with fsync on, which the other one runs without.
func fsyncRounds(ctx context.Context, e *env, rep *report, w io.Writer) error {
	c, err := startCluster(ctx, true)
	if err != nil {
		return fmt.Errorf("postgres: start a cluster with fsync on: %w", err)
	}
	defer stopCluster(c, w)
	rep.Postgres.clusters = append(rep.Postgres.clusters, c.Dir)
	rep.pgDurableHeader(w)
	for i := 1; i <= e.opts.pgFsyncRounds; i++ {
		r := pgAppendPair{Round: i}
		if r.OneProcess, err = pgAppendRound(ctx, e, c, 1, i); err != nil {
			return err
		}
		if r.TwoProcesses, err = pgAppendRound(ctx, e, c, 2, i); err != nil {
			return err
		}
		rep.addPGAppendRound(w, r, true)
	}
	return nil
}

// pgPaging fills the paging section's session on SQLite and on PostgreSQL,
// times the first and a deep page on each, then alternates rounds of
// concurrent page reads between them.
func pgPaging(ctx context.Context, e *env, rep *report, w io.Writer, c *pgCluster) error {
	// Connections to a stopped server are of no further use.
	defer e.client.CloseIdleConnections()
	sq, sqMsgs, sqRes, err := startPaging(ctx, e)
	if err != nil {
		return err
	}
	defer sq.stop()
	url, err := c.createDB(ctx, "paging")
	if err != nil {
		return err
	}
	srvs, err := startLogbooks(ctx, e, url, "pg-paging", 1)
	defer stopAll(srvs)
	if err != nil {
		return err
	}
	pg := srvs[0]
	pgMsgs, pgRes, err := fillPaging(ctx, e, pg, c.cpu)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := pageLatencies(ctx, e, sq, sqMsgs, &sqRes); err != nil {
		return err
	}
	if err := pageLatencies(ctx, e, pg, pgMsgs, &pgRes); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	rep.setPGPaging(w, e.opts, sqRes, pgRes)
	targets := []pageTarget{
		{name: "sqlite", srv: sq, url: func(after int) string {
			return fmt.Sprintf("%s?after_seq=%d&limit=%d", sqMsgs, after, pageSize)
		}},
		{name: "postgres", srv: pg, db: c.cpu, url: func(after int) string {
			return fmt.Sprintf("%s?after_seq=%d&limit=%d", pgMsgs, after, pageSize)
		}},
	}
	for i := 1; i <= e.opts.pgRounds; i++ {
		r := pgPageRound{Round: i}
		for _, t := range targets {
			st, err := pageReadRound(ctx, e, t, sqRes.Messages, i)
			if err != nil {
				return err
			}
			if t.name == "sqlite" {
				r.SQLite = st
			} else {
				r.Postgres = st
			}
		}
		rep.addPGPageRound(w, r)
	}
	rep.pgPagingFooter(w)
	return nil
}
