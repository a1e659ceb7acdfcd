package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// The postgres section end to end, briefly, against a server built from
// ../server: one round of appends on SQLite and on PostgreSQL with one and two
// processes, one with fsync on, the paging measurements on both backends, the
// report, and nothing left running or on disk afterwards.
func TestPostgresSection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server and PostgreSQL; skipped with -short")
	}
	if _, err := pgtest.BinDir(); err != nil {
		t.Skipf("PostgreSQL is not installed here (%v): the postgres section is not tested", err)
	}
	opts := options{clients: 4, duration: 200 * time.Millisecond, pgRounds: 1, pgFsyncRounds: 1,
		pagingFill: 2 * batchSize, pagingReps: 5, pagingClients: 2}
	e := &env{opts: opts, serverBin: buildServer(t), tmp: t.TempDir(), client: newClient()}
	defer e.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var rep report
	var out bytes.Buffer
	if err := postgresSection(ctx, e, &rep, &out); err != nil {
		t.Fatal(err)
	}
	rep.summary(&out)
	t.Log(out.String())

	pr := rep.Postgres
	if pr == nil || pr.Skipped != "" {
		t.Fatalf("postgres report %+v, want one that ran", pr)
	}
	if len(pr.Rounds) != 1 || pr.Rounds[0].SQLite == nil || len(pr.Durable) != 1 || pr.Durable[0].SQLite != nil {
		t.Fatalf("%d rounds and %d with fsync on, want one each, SQLite only in the first: %+v", len(pr.Rounds), len(pr.Durable), pr)
	}
	all := map[string]stats{"sqlite": *pr.Rounds[0].SQLite, "pg-1proc": pr.Rounds[0].OneProcess, "pg-2proc": pr.Rounds[0].TwoProcesses,
		"pg-1proc+fs": pr.Durable[0].OneProcess, "pg-2proc+fs": pr.Durable[0].TwoProcesses}
	for name, s := range all {
		if s.Requests == 0 || s.Errors != 0 || !(0 < s.P50Ms && s.P50Ms <= s.P99Ms) {
			t.Errorf("%s: %+v; want appends without errors and 0 < p50 <= p99", name, s)
		}
		// SQLite runs inside the server; PostgreSQL's backends do the work apart.
		if name == "sqlite" && s.DBCPU != 0 || name != "sqlite" && s.DBCPU < 0 {
			t.Errorf("%s: database CPU %v µs per append, want 0 on SQLite and a figure on PostgreSQL", name, s.DBCPU)
		}
	}
	if len(pr.Appends) != 5 || pr.Appends[2].Name != "pg-2proc" || pr.Appends[2].PerSecond != pr.Rounds[0].TwoProcesses.PerSecond {
		t.Errorf("append medians %+v, want five, the third pg-2proc's one round", pr.Appends)
	}
	pp := pr.Paging
	if pp == nil || pp.SQLite.Messages != 2*batchSize || pp.Postgres.Messages != 2*batchSize || pp.Postgres.Reps != 5 {
		t.Fatalf("paging %+v, want %d messages and 5 reps on both", pp, 2*batchSize)
	}
	for _, p := range []pagingResult{pp.SQLite, pp.Postgres} {
		if !(0 < p.FirstP50Ms && p.FirstP50Ms <= p.FirstP99Ms && 0 < p.DeepP50Ms && p.DeepP50Ms <= p.DeepP99Ms) {
			t.Errorf("page latencies %+v, want 0 < p50 <= p99", p)
		}
	}
	if len(pp.Rounds) != 1 || pp.Rounds[0].Postgres.Requests == 0 || pp.Rounds[0].SQLite.Errors != 0 || len(pp.Reads) != 2 {
		t.Errorf("page read rounds %+v, medians %+v; want one round of reads without errors on both", pp.Rounds, pp.Reads)
	}
	if len(pr.clusters) != 2 {
		t.Errorf("%d clusters, want 2 (fsync off and on)", len(pr.clusters))
	}
	for _, dir := range pr.clusters {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cluster directory %s still there (%v): the cluster was not stopped", dir, err)
		}
	}
	if entries, _ := os.ReadDir(e.tmp); len(entries) != 0 {
		t.Errorf("left %d entries in the temporary directory, want none", len(entries))
	}
	for _, want := range []string{"(h) PostgreSQL", "pg-2proc+fs", "median of 1 rounds", "(h2) paging", "postgres  appends/s",
		"postgres  pages/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	var back struct {
		Postgres *postgresReport `json:"postgres"`
	}
	if err := json.Unmarshal(mustIndentJSON(&rep), &back); err != nil || back.Postgres == nil || back.Postgres.Paging == nil ||
		back.Postgres.Rounds[0].OneProcess.PerSecond != pr.Rounds[0].OneProcess.PerSecond {
		t.Errorf("JSON summary's postgres = %+v (%v), want %+v", back.Postgres, err, pr)
	}
}

// Without PostgreSQL the section says so in one line and the run goes on.
func TestPostgresSectionSkipped(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("LOGBOOK_PG_BIN", "")
	dirs := pgtest.BinDirs
	pgtest.BinDirs = nil
	defer func() { pgtest.BinDirs = dirs }()

	var rep report
	var out bytes.Buffer
	if err := postgresSection(context.Background(), &env{}, &rep, &out); err != nil {
		t.Fatal(err)
	}
	rep.summary(&out)
	if rep.Postgres == nil || !strings.Contains(rep.Postgres.Skipped, "not installed") {
		t.Errorf("postgres report %+v, want it skipped as not installed", rep.Postgres)
	}
	if lines := strings.Count(out.String(), "skipped"); lines != 2 || !strings.Contains(out.String(), "(h) PostgreSQL beside SQLite: skipped") {
		t.Errorf("output %q, want one line in the section and one in the summary saying it was skipped", out.String())
	}
}

func TestPostgresFlags(t *testing.T) {
	o, err := parseFlags([]string{"-server", "x", "-only", "postgres"})
	if err != nil || o.only != "postgres" || o.pgRounds != 2 || o.pgFsyncRounds != 1 || !o.postgres {
		t.Errorf("parseFlags: %+v (%v); want -only postgres and the defaults 2 rounds, 1 with fsync on", o, err)
	}
	if _, err := parseFlags([]string{"-server", "x", "-pg-rounds", "0"}); err == nil {
		t.Error("-pg-rounds 0 accepted")
	}
	if o, err := parseFlags([]string{"-server", "x", "-pg-fsync-rounds", "0", "-postgres=false"}); err != nil || o.pgFsyncRounds != 0 || o.postgres {
		t.Errorf("-pg-fsync-rounds 0 -postgres=false: %+v (%v)", o, err)
	}
}
