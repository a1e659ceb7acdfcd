package main

import (
	"fmt"
	"io"
)

// postgresReport is the postgres section: Logbook on PostgreSQL beside
// Logbook on SQLite.
type postgresReport struct {
	// Skipped says why the section did not run (PostgreSQL is not installed).
	Skipped  string `json:"skipped,omitempty"`
	Version  string `json:"version,omitempty"`
	Settings string `json:"cluster_settings,omitempty"`
	Clients  int    `json:"clients,omitempty"`
	// Rounds are single appends; Durable the same on a cluster with fsync on,
	// without SQLite's (nil there).
	Rounds  []pgAppendPair `json:"append_rounds,omitempty"`
	Durable []pgAppendPair `json:"append_rounds_fsync_on,omitempty"`
	// Appends are the medians over the rounds of each configuration.
	Appends []pgMedian `json:"append_medians,omitempty"`
	// VsSQLite is the median of the rounds' ratios pg-1proc ÷ sqlite
	// appends/s, against targetPGSessions; TwoVsOne pg-2proc ÷ pg-1proc,
	// against targetPGProcs (issue 21).
	VsSQLite     float64         `json:"ratio_1proc_vs_sqlite,omitempty"`
	VsSQLitePass bool            `json:"ratio_1proc_vs_sqlite_pass,omitempty"`
	TwoVsOne     float64         `json:"ratio_2proc_vs_1proc,omitempty"`
	TwoVsOnePass bool            `json:"ratio_2proc_vs_1proc_pass,omitempty"`
	Paging       *pgPagingReport `json:"paging,omitempty"`

	clusters []string // data directories, which must be gone once the section ends
}

type pgAppendPair struct {
	Round        int    `json:"round"`
	SQLite       *stats `json:"sqlite,omitempty"`
	OneProcess   stats  `json:"postgres_1_process"`
	TwoProcesses stats  `json:"postgres_2_processes"`
}

// pgMedian is one configuration's medians over its rounds; CPU is µs per
// append or page, -1 when unavailable.
type pgMedian struct {
	Name      string  `json:"name"`
	PerSecond float64 `json:"per_second"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	ServerCPU float64 `json:"server_cpu_us_per_unit"`
	DBCPU     float64 `json:"db_cpu_us_per_unit"`
}

type pgPageRound struct {
	Round    int   `json:"round"`
	SQLite   stats `json:"sqlite"`
	Postgres stats `json:"postgres"`
}

type pgPagingReport struct {
	SQLite   pagingResult  `json:"sqlite"`
	Postgres pagingResult  `json:"postgres"`
	Clients  int           `json:"clients"`
	Rounds   []pgPageRound `json:"rounds"`
	Reads    []pgMedian    `json:"read_medians"`
}

// pgSettings are pgtest's cluster settings, as the header and the JSON say them.
func pgSettings(durable bool) string {
	if durable {
		return "fsync=on, full_page_writes=on, synchronous_commit=on"
	}
	return "fsync=off, full_page_writes=off, synchronous_commit=on"
}

func (r *report) postgresHeader(w io.Writer, o options, c *pgCluster) {
	r.Postgres = &postgresReport{Version: c.version, Settings: pgSettings(false), Clients: o.clients}
	fmt.Fprintf(w, "\n(h) PostgreSQL %s beside SQLite: a throwaway cluster on 127.0.0.1 (%s:\n", c.version, pgSettings(false))
	fmt.Fprintln(w, "commits are not fsynced, so PostgreSQL's appends are optimistic beside SQLite's synchronous=FULL),")
	fmt.Fprintln(w, "each Logbook process with its default pool (pgxpool: 4 connections per CPU)")
	fmt.Fprintf(w, "single appends as in (a): %d clients, one session each, %s per round; each round runs sqlite = Logbook on\n",
		o.clients, o.duration)
	fmt.Fprintln(w, "a fresh SQLite file, pg-1proc = one Logbook process on a fresh PostgreSQL database, pg-2proc = two")
	fmt.Fprintln(w, "processes on one fresh database, the clients split between them; srv CPU is summed over the Logbook")
	fmt.Fprintln(w, "processes, pg CPU is PostgreSQL's (the postmaster and its children: backends, WAL writer, ...)")
	pgTableHeader(w, "appends/s", "op")
}

func pgTableHeader(w io.Writer, rate, unit string) {
	fmt.Fprintf(w, "%-5s %-11s %10s %8s %8s %12s %12s %8s %8s %9s %6s\n", "round", "server", rate, "p50 ms", "p99 ms",
		"srv CPU µs/"+unit, "pg CPU µs/"+unit, "srv CPU", "pg CPU", "other CPU", "errors")
}

// pgRow prints a round and flags it when it was noisy; section tells its
// rounds apart from other sections' in the warning.
func (r *report) pgRow(w io.Writer, section string, round int, name string, s stats) {
	if noisy(s) {
		r.Noisy = append(r.Noisy, fmt.Sprintf("%s%s r%d (%.0f%%)", section, name, round, s.OtherCPU))
	}
	db, dbPct := "-", "-"
	if s.DBCPU != 0 {
		db, dbPct = cpuCell(s.DBCPU), pctCell(s.DBCPU, s.DBCPUPercent)
	}
	fmt.Fprintf(w, "%-5d %-11s %10.0f %8.2f %8.2f %12s %12s %8s %8s %9s %6d\n", round, name, s.PerSecond, s.P50Ms, s.P99Ms,
		cpuCell(s.ServerCPU), db, pctCell(s.ServerCPU, s.CPUPercent), dbPct, pctCell(s.OtherCPU, s.OtherCPU), s.Errors)
}

func (r *report) pgDurableHeader(w io.Writer) {
	fmt.Fprintf(w, "+fs = the same on a second cluster with PostgreSQL's defaults (%s):\n", pgSettings(true))
	fmt.Fprintln(w, "every commit waits for its WAL fsync, as every SQLite commit does for its own")
}

func (r *report) addPGAppendRound(w io.Writer, p pgAppendPair, durable bool) {
	pr := r.Postgres
	section, suffix := "postgres ", ""
	if durable {
		section, suffix = "postgres fsync ", "+fs"
		pr.Durable = append(pr.Durable, p)
	} else {
		pr.Rounds = append(pr.Rounds, p)
	}
	if p.SQLite != nil {
		r.pgRow(w, section, p.Round, "sqlite", *p.SQLite)
	}
	r.pgRow(w, section, p.Round, "pg-1proc"+suffix, p.OneProcess)
	r.pgRow(w, section, p.Round, "pg-2proc"+suffix, p.TwoProcesses)
	if p.SQLite != nil {
		fmt.Fprintf(w, "      pg-1proc/sqlite = %.2f\n", p.OneProcess.PerSecond/p.SQLite.PerSecond)
	}
	fmt.Fprintf(w, "      pg-2proc/pg-1proc = %.2f\n", p.TwoProcesses.PerSecond/p.OneProcess.PerSecond)
}

// medianOf is the medians of rounds, for the configuration named name.
func medianOf(name string, rounds []stats) pgMedian {
	var per, p50, p99, cpu, db []float64
	for _, s := range rounds {
		per, p50, p99 = append(per, s.PerSecond), append(p50, s.P50Ms), append(p99, s.P99Ms)
		cpu, db = append(cpu, s.ServerCPU), append(db, s.DBCPU)
	}
	return pgMedian{Name: name, PerSecond: median(per), P50Ms: median(p50), P99Ms: median(p99), ServerCPU: median(cpu), DBCPU: median(db)}
}

func (r *report) pgAppendsFooter(w io.Writer) {
	pr := r.Postgres
	var sq, one, two, oneFS, twoFS []stats
	for _, p := range pr.Rounds {
		sq, one, two = append(sq, *p.SQLite), append(one, p.OneProcess), append(two, p.TwoProcesses)
	}
	for _, p := range pr.Durable {
		oneFS, twoFS = append(oneFS, p.OneProcess), append(twoFS, p.TwoProcesses)
	}
	pr.Appends = []pgMedian{medianOf("sqlite", sq), medianOf("pg-1proc", one), medianOf("pg-2proc", two)}
	if len(pr.Durable) > 0 {
		pr.Appends = append(pr.Appends, medianOf("pg-1proc+fs", oneFS), medianOf("pg-2proc+fs", twoFS))
	}
	pgMediansTable(w, fmt.Sprintf("median of %d rounds", len(pr.Rounds)), "appends/s", "append", pr.Appends)
	if len(pr.Durable) > 0 {
		fmt.Fprintf(w, "(+fs: median of %d rounds with fsync on)\n", len(pr.Durable))
	}
	var vs, procs []float64
	for _, p := range pr.Rounds {
		vs, procs = append(vs, p.OneProcess.PerSecond/p.SQLite.PerSecond), append(procs, p.TwoProcesses.PerSecond/p.OneProcess.PerSecond)
	}
	pr.VsSQLite, pr.TwoVsOne = median(vs), median(procs)
	pr.VsSQLitePass, pr.TwoVsOnePass = pr.VsSQLite >= targetPGSessions, pr.TwoVsOne >= targetPGProcs
	fmt.Fprintf(w, "median of %d per-round ratios pg-1proc/sqlite appends/s: %.2f   target >= %.1f: %s\n",
		len(vs), pr.VsSQLite, targetPGSessions, verdict(pr.VsSQLitePass))
	fmt.Fprintf(w, "median of %d per-round ratios pg-2proc/pg-1proc appends/s: %.2f   target >= %.1f: %s\n",
		len(procs), pr.TwoVsOne, targetPGProcs, verdict(pr.TwoVsOnePass))
}

// pgMediansTable prints medians with the CPU per unit of both processes
// together, and each configuration's rate against the first's.
func pgMediansTable(w io.Writer, title, rate, unit string, ms []pgMedian) {
	fmt.Fprintf(w, "%-20s %10s %8s %8s %16s %10s\n", title, rate, "p50 ms", "p99 ms", "CPU µs/"+unit+" all", "÷ "+ms[0].Name)
	for _, m := range ms {
		all := "n/a"
		if m.ServerCPU >= 0 && m.DBCPU >= 0 {
			all = fmt.Sprintf("%.1f", m.ServerCPU+m.DBCPU)
		}
		fmt.Fprintf(w, "%-20s %10.0f %8.2f %8.2f %16s %10.2f\n", m.Name, m.PerSecond, m.P50Ms, m.P99Ms, all, m.PerSecond/ms[0].PerSecond)
	}
}

func (r *report) setPGPaging(w io.Writer, o options, sq, pg pagingResult) {
	r.Postgres.Paging = &pgPagingReport{SQLite: sq, Postgres: pg, Clients: o.pagingClients}
	fmt.Fprintf(w, "\n(h2) paging as in (e) on one Logbook process per backend: %d messages in one session, filled in\n", sq.Messages)
	fmt.Fprintf(w, "%d-message batches (sqlite %.1fs, postgres %.1fs, then idle after %.1fs and %.1fs); %d timed reads of each page\n",
		batchSize, sq.FillSecs, pg.FillSecs, sq.SettleSecs, pg.SettleSecs, sq.Reps)
	fmt.Fprintf(w, "%-18s %12s %12s %14s %14s\n", "page", "sqlite p50", "sqlite p99", "postgres p50", "postgres p99")
	fmt.Fprintf(w, "%-18s %12.2f %12.2f %14.2f %14.2f\n", "after_seq=0", sq.FirstP50Ms, sq.FirstP99Ms, pg.FirstP50Ms, pg.FirstP99Ms)
	fmt.Fprintf(w, "%-18s %12.2f %12.2f %14.2f %14.2f\n", fmt.Sprintf("after_seq=%d", sq.DeepAfter),
		sq.DeepP50Ms, sq.DeepP99Ms, pg.DeepP50Ms, pg.DeepP99Ms)
	fmt.Fprintf(w, "deep/first (p50): sqlite %.2f, postgres %.2f\n", sq.RatioP50, pg.RatioP50)
	fmt.Fprintf(w, "concurrent page reads as in (e2): %d clients, %s per round, the two backends in turn\n", o.pagingClients, o.duration)
	pgTableHeader(w, "pages/s", "pg")
}

func (r *report) addPGPageRound(w io.Writer, p pgPageRound) {
	pp := r.Postgres.Paging
	pp.Rounds = append(pp.Rounds, p)
	r.pgRow(w, "postgres page reads ", p.Round, "sqlite", p.SQLite)
	r.pgRow(w, "postgres page reads ", p.Round, "postgres", p.Postgres)
}

func (r *report) pgPagingFooter(w io.Writer) {
	pp := r.Postgres.Paging
	var sq, pg []stats
	for _, p := range pp.Rounds {
		sq, pg = append(sq, p.SQLite), append(pg, p.Postgres)
	}
	pp.Reads = []pgMedian{medianOf("sqlite", sq), medianOf("postgres", pg)}
	pgMediansTable(w, fmt.Sprintf("median of %d rounds", len(pp.Rounds)), "pages/s", "page", pp.Reads)
}

func (r *report) postgresSummary(w io.Writer) {
	pr := r.Postgres
	switch {
	case pr == nil:
		return
	case pr.Skipped != "":
		fmt.Fprintf(w, "  postgres  skipped: %s\n", pr.Skipped)
		return
	}
	if len(pr.Appends) > 0 {
		fmt.Fprint(w, "  postgres  appends/s")
		for _, m := range pr.Appends {
			fmt.Fprintf(w, "  %s %.0f", m.Name, m.PerSecond)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  postgres  1proc/sqlite       %6.2f  (target >= %.1f)  %s\n", pr.VsSQLite, targetPGSessions, verdict(pr.VsSQLitePass))
		fmt.Fprintf(w, "  postgres  2proc/1proc        %6.2f  (target >= %.1f)  %s\n", pr.TwoVsOne, targetPGProcs, verdict(pr.TwoVsOnePass))
	}
	if pp := pr.Paging; pp != nil && len(pp.Reads) == 2 {
		fmt.Fprintf(w, "  postgres  pages/s    sqlite %.0f  postgres %.0f;  deep page p50 ms  sqlite %.2f  postgres %.2f\n",
			pp.Reads[0].PerSecond, pp.Reads[1].PerSecond, pp.SQLite.DeepP50Ms, pp.Postgres.DeepP50Ms)
	}
}
