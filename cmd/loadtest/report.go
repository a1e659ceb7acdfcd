package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Targets the figures are read against (docs/benchmarks.md).
const (
	targetAppendRatio = 3.0 // Logbook appends/s ÷ naive appends/s, at least
	targetBatchRatio  = 0.9 // API batch msgs/s ÷ direct SQLite msgs/s, at least
	// Logbook's single append p99, the median over the rounds, at most.
	targetAppendP99 = 10.0 // ms
	// Logbook's server CPU ÷ the floor's (floor.go), at most: per single
	// append, and per page or context read.
	targetFloorAppend = 1.2
	targetFloorRead   = 1.1
	// Server CPU per message of pipelined NDJSON streams, at most.
	targetStreamCPU = 25.0 // µs
	// PostgreSQL, at least: one Logbook process's appends/s on 32 sessions ÷
	// SQLite's in the same rounds, and two processes' ÷ one's.
	targetPGSessions = 0.5
	targetPGProcs    = 1.3
	targetPageRatio  = 1.2 // deep page p50 ÷ first page p50, at most
	// B's append p99 beside A's 1 MB appends ÷ B's p99 alone, at most.
	targetFairnessRatio = 2.0
	// With -pocketbase: Logbook ÷ PocketBase, single appends/s and pages/s of
	// 100 messages from concurrent clients, at least.
	targetPBAppendRatio = 2.0
	targetPBPageRatio   = 5.0
	// Logbook's server CPU per 100-message page under concurrent reads, at most.
	targetPageCPU = 350.0 // µs
	// A context read of a 10,000-message session, p50 with one client, at most:
	// it runs before every LLM call, so it adds to every turn's latency.
	targetContextMs = 1.0
)

type report struct {
	// Noisy names the rounds during which something else on the machine used more
	// than noisyOtherCPU: their figures understate what this machine can do.
	Noisy    []string        `json:"noisy_rounds"`
	Machine  machine         `json:"machine"`
	Settings settings        `json:"settings"`
	Appends  appendsReport   `json:"appends"`
	Batch    batchReport     `json:"batch"`
	Paging   pagingReport    `json:"paging"`
	Stream   *streamReport   `json:"stream,omitempty"`   // nil when the stream section did not run
	Context  *contextReport  `json:"context,omitempty"`  // nil when the context section did not run
	Postgres *postgresReport `json:"postgres,omitempty"` // nil when the postgres section did not run
	Fairness *fairnessReport `json:"fairness,omitempty"` // nil with -fairness=false
	// PocketBase is the third baseline; nil without -pocketbase.
	PocketBase *pocketbaseInfo `json:"pocketbase,omitempty"`
}

type pocketbaseInfo struct {
	Binary  string `json:"binary"`
	Version string `json:"version"`
	BuiltBy string `json:"built_by"`
	SQLite  string `json:"sqlite"`
	Logs    string `json:"logs"`
}

type settings struct {
	RoundSeconds float64 `json:"round_seconds"`
	Sync         string  `json:"sync"`
	LogLevel     string  `json:"server_log_level"`
	CPUClockHz   int     `json:"cpu_clock_hz"`
	// NaiveMaxConns is the naive server's pool size; 0 is database/sql's default.
	NaiveMaxConns int `json:"naive_max_conns"`
}

type appendPair struct {
	Round   int     `json:"round"`
	Logbook stats   `json:"logbook"`
	Naive   stats   `json:"naive"`
	Ratio   float64 `json:"ratio"`
	// PocketBase ran in the same round with -pocketbase; PBRatio is
	// Logbook's appends/s ÷ PocketBase's.
	PocketBase *stats  `json:"pocketbase,omitempty"`
	PBRatio    float64 `json:"ratio_pocketbase,omitempty"`
	// Floor is the floor server's round (floor.go); FloorCPU is Logbook's
	// server CPU per append ÷ the floor's.
	Floor    *stats  `json:"floor,omitempty"`
	FloorCPU float64 `json:"cpu_ratio_floor,omitempty"`
}

type appendsReport struct {
	Clients     int          `json:"clients"`
	Pairs       []appendPair `json:"pairs"`
	MedianRatio float64      `json:"median_ratio"`
	// CleanRatio is the median over the CleanPairs pairs with no noisy round;
	// nil if there are none.
	CleanPairs int      `json:"clean_pairs"`
	CleanRatio *float64 `json:"median_ratio_clean_pairs"`
	Target     float64  `json:"target_min"`
	Pass       bool     `json:"pass"`
	// PocketBase is logbook/pocketbase, with -pocketbase.
	PocketBase *versusReport `json:"pocketbase,omitempty"`
	// CPU and P99Ms are Logbook's server CPU per append (µs) and p99, medians
	// over the rounds; FloorCPU is the median of the rounds' CPU ratios
	// Logbook ÷ floor, against targetFloorAppend, and P99Ms is held to
	// targetAppendP99.
	CPU          float64 `json:"logbook_server_cpu_us_per_append"`
	FloorCPU     float64 `json:"cpu_ratio_floor"`
	FloorCPUPass bool    `json:"cpu_ratio_floor_pass"`
	P99Ms        float64 `json:"logbook_p99_ms"`
	P99Pass      bool    `json:"p99_pass"`
}

// versusReport is the median of per-round ratios Logbook ÷ a baseline, the
// median over the rounds where neither side was noisy, and the verdict.
type versusReport struct {
	MedianRatio float64  `json:"median_ratio"`
	CleanPairs  int      `json:"clean_pairs"`
	CleanRatio  *float64 `json:"median_ratio_clean_pairs"`
	Target      float64  `json:"target_min"`
	Pass        bool     `json:"pass"`
}

func versus(ratios, clean []float64, target float64) *versusReport {
	m := median(ratios)
	return &versusReport{MedianRatio: m, CleanPairs: len(clean), CleanRatio: medianOrNil(clean), Target: target,
		Pass: len(ratios) > 0 && m >= target}
}

type batchPair struct {
	Round  int     `json:"round"`
	API    stats   `json:"api"`
	Direct stats   `json:"direct"`
	Ratio  float64 `json:"ratio"`
}

type batchReport struct {
	Clients     int         `json:"api_clients"`
	BatchSize   int         `json:"batch_size"`
	Pairs       []batchPair `json:"pairs"`
	MedianRatio float64     `json:"median_ratio"`
	CleanPairs  int         `json:"clean_pairs"`
	CleanRatio  *float64    `json:"median_ratio_clean_pairs"`
	Target      float64     `json:"target_min"`
	Pass        bool        `json:"pass"`
}

type pagingReport struct {
	pagingResult
	Target float64 `json:"target_max"`
	Pass   bool    `json:"pass"`
	// Reads is the concurrent page reads that follow on the same session.
	Reads *pageReadsReport `json:"reads,omitempty"`
}

func (r *report) header(w io.Writer, o options) {
	r.Settings = settings{RoundSeconds: o.duration.Seconds(), Sync: "full", LogLevel: "warn", CPUClockHz: clockTick,
		NaiveMaxConns: o.naiveMaxConns}
	m := r.Machine
	fmt.Fprintf(w, "Logbook load test: %d CPUs (%s), %s %s/%s\n", m.CPUs, m.CPUModel, m.GoVersion, m.OS, m.Arch)
	fmt.Fprintf(w, "databases in %s (%s, 4 KiB write+fsync p50 %.2f ms), synchronous=FULL, WAL, 127.0.0.1 only\n", m.Dir, m.FS, m.FsyncP50)
	fmt.Fprintln(w, "servers log at warn: Logbook's per-request access log is at info, so neither server logs per request")
	fmt.Fprintf(w, "CPU = utime+stime from /proc/<pid>/stat (%d Hz ticks) before and after each timed round; the load\n", clockTick)
	fmt.Fprintln(w, "generator shares the machine: its CPU is shown as cli CPU, and other CPU (% of one core) is what")
	fmt.Fprintln(w, "everything else used meanwhile (other processes, interrupts, hypervisor steal); CPU % is of one core")
	if pb := r.PocketBase; pb != nil {
		fmt.Fprintf(w, "pocketbase = PocketBase %s (examples/base), built from source by %s: %s\n", pb.Version, pb.BuiltBy, pb.Binary)
		fmt.Fprintf(w, "  its SQLite as it sets it, unchanged: %s;\n", pb.SQLite)
		fmt.Fprintln(w, "  in WAL mode synchronous=NORMAL fsyncs checkpoints, not commits, where Logbook and naive run FULL;")
		fmt.Fprintf(w, "  served with --dev=false; %s\n", pb.Logs)
	}
}

// nameWidth fits the server column to the longest name it will hold.
func (r *report) nameWidth() int {
	if r.PocketBase != nil {
		return len("pocketbase")
	}
	return 8
}

func (r *report) appendsHeader(w io.Writer, o options) {
	r.Appends = appendsReport{Clients: o.clients, Target: targetAppendRatio}
	fmt.Fprintf(w, "\n(a, b) single-message appends: %d clients, one session each, one ~200-byte message per request,\n", o.clients)
	fmt.Fprintf(w, "keep-alive HTTP, %s per round, each round on a freshly started server and empty database\n", o.duration)
	pool := "database/sql defaults: unlimited open, 2 idle"
	if o.naiveMaxConns > 0 {
		pool = fmt.Sprintf("%d open, %[1]d idle", o.naiveMaxConns)
	}
	fmt.Fprintf(w, "naive = net/http + database/sql, BEGIN IMMEDIATE … COMMIT per request, pool: %s\n", pool)
	if r.PocketBase != nil {
		r.Appends.PocketBase = &versusReport{Target: targetPBAppendRatio}
		fmt.Fprintf(w, "pocketbase = POST /api/collections/%s/records, one record per request in the client's own session value\n", pbCollection)
	}
	fmt.Fprintf(w, "%-5s %-*s %10s %8s %8s %14s %8s %14s %9s %6s\n",
		"round", r.nameWidth(), "server", "appends/s", "p50 ms", "p99 ms", "srv CPU µs/op", "srv CPU", "cli CPU µs/op", "other CPU", "errors")
}

// noisyOtherCPU is the share of one core that other work may take during a
// round before the round is flagged: the tool itself leaves a few % for
// interrupts and kernel threads.
const noisyOtherCPU = 20.0

func noisy(s stats) bool { return s.OtherCPU > noisyOtherCPU }

// cleanLine shows, when some pairs were noisy, what the others say: a competing
// process slows the two sides of a pair unequally, so noisy pairs skew the ratio.
func cleanLine(w io.Writer, ratio *float64, clean, pairs int) {
	switch {
	case clean == pairs:
	case ratio == nil:
		fmt.Fprintln(w, "    every pair had a noisy round (see the warning at the end)")
	default:
		fmt.Fprintf(w, "    median over the %d of %d pairs with no noisy round: %.2f\n", clean, pairs, *ratio)
	}
}

func medianOrNil(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	m := median(xs)
	return &m
}

func (r *report) row(w io.Writer, round int, name string, s stats) {
	r.rowOf(w, "", round, name, s)
}

// rowOf is row for a section whose server names another section also uses:
// section tells their rounds apart in the warning about noisy rounds.
func (r *report) rowOf(w io.Writer, section string, round int, name string, s stats) {
	if noisy(s) {
		r.Noisy = append(r.Noisy, fmt.Sprintf("%s%s r%d (%.0f%%)", section, name, round, s.OtherCPU))
	}
	fmt.Fprintf(w, "%-5d %-*s %10.0f %8.2f %8.2f %14s %8s %14s %9s %6d\n",
		round, r.nameWidth(), name, s.PerSecond, s.P50Ms, s.P99Ms, cpuCell(s.ServerCPU), pctCell(s.ServerCPU, s.CPUPercent),
		cpuCell(s.ClientCPU), pctCell(s.OtherCPU, s.OtherCPU), s.Errors)
}

func cpuCell(us float64) string {
	if us < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", us)
}

// pctCell prints pct, or n/a when valid (a figure it depends on) is negative.
func pctCell(valid, pct float64) string {
	if valid < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", pct)
}

func (r *report) addAppendPair(w io.Writer, p appendPair) {
	p.Ratio = p.Logbook.PerSecond / p.Naive.PerSecond
	r.Appends.Pairs = append(r.Appends.Pairs, p)
	var ratios, clean []float64
	for _, p := range r.Appends.Pairs {
		ratios = append(ratios, p.Ratio)
		if !noisy(p.Logbook) && !noisy(p.Naive) {
			clean = append(clean, p.Ratio)
		}
	}
	r.Appends.MedianRatio, r.Appends.CleanPairs, r.Appends.CleanRatio = median(ratios), len(clean), medianOrNil(clean)
	r.Appends.Pass = r.Appends.MedianRatio >= targetAppendRatio
	var cpu, p99 []float64
	for _, p := range r.Appends.Pairs {
		cpu, p99 = append(cpu, p.Logbook.ServerCPU), append(p99, p.Logbook.P99Ms)
	}
	r.Appends.CPU, r.Appends.P99Ms = median(cpu), median(p99)
	r.Appends.P99Pass = r.Appends.P99Ms <= targetAppendP99
	fmt.Fprintf(w, "      logbook/naive = %.2f\n", p.Ratio)
	if p.Floor != nil {
		r.addAppendFloorRatio(w)
	}
	if p.PocketBase != nil {
		r.addAppendPBRatio(w)
	}
}

// addAppendFloorRatio recomputes Logbook's CPU per append ÷ the floor's
// over the pairs so far, once the latest pair, with its floor round, is in.
func (r *report) addAppendFloorRatio(w io.Writer) {
	pairs := r.Appends.Pairs
	last := &pairs[len(pairs)-1]
	last.FloorCPU = cpuRatio(last.Logbook.ServerCPU, last.Floor.ServerCPU)
	var ratios []float64
	for _, p := range pairs {
		if p.Floor != nil && p.FloorCPU > 0 {
			ratios = append(ratios, p.FloorCPU)
		}
	}
	r.Appends.FloorCPU = median(ratios)
	r.Appends.FloorCPUPass = len(ratios) > 0 && r.Appends.FloorCPU <= targetFloorAppend
	fmt.Fprintf(w, "      logbook/floor server CPU per append = %.2f\n", last.FloorCPU)
}

// cpuRatio is a ÷ b, or -1 when either is unknown.
func cpuRatio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return -1
	}
	return a / b
}

// addAppendPBRatio recomputes logbook/pocketbase over the pairs so far, once
// the latest pair, with its PocketBase round, is in.
func (r *report) addAppendPBRatio(w io.Writer) {
	pairs := r.Appends.Pairs
	last := &pairs[len(pairs)-1]
	last.PBRatio = last.Logbook.PerSecond / last.PocketBase.PerSecond
	var ratios, clean []float64
	for _, p := range pairs {
		if p.PocketBase == nil {
			continue
		}
		ratios = append(ratios, p.PBRatio)
		if !noisy(p.Logbook) && !noisy(*p.PocketBase) {
			clean = append(clean, p.PBRatio)
		}
	}
	r.Appends.PocketBase = versus(ratios, clean, targetPBAppendRatio)
	fmt.Fprintf(w, "      logbook/pocketbase = %.2f\n", last.PBRatio)
}

func (r *report) appendsFooter(w io.Writer) {
	a := r.Appends
	fmt.Fprintf(w, "(c) median of %d per-pair ratios logbook/naive: %.2f   target >= %.1f: %s\n",
		len(a.Pairs), a.MedianRatio, a.Target, verdict(a.Pass))
	cleanLine(w, a.CleanRatio, a.CleanPairs, len(a.Pairs))
	if pb := a.PocketBase; pb != nil {
		fmt.Fprintf(w, "(c) median of %d per-round ratios logbook/pocketbase: %.2f   target >= %.1f: %s\n",
			len(a.Pairs), pb.MedianRatio, pb.Target, verdict(pb.Pass))
		cleanLine(w, pb.CleanRatio, pb.CleanPairs, len(a.Pairs))
	}
}

func (r *report) batchHeader(w io.Writer, o options) {
	r.Batch = batchReport{Clients: o.batchClients, BatchSize: batchSize, Target: targetBatchRatio}
	fmt.Fprintf(w, "\n(d) 1000-message batches, %s per round: api = %d clients POSTing batches to Logbook, one session each;\n", o.duration, o.batchClients)
	fmt.Fprintln(w, "direct = this process inserting the same rows into Logbook's schema, 1000 per transaction (CPU: its own)")
	fmt.Fprintf(w, "%-5s %-*s %10s %8s %8s %14s %8s %14s %9s %6s\n",
		"round", r.nameWidth(), "path", "msgs/s", "p50 ms", "p99 ms", "CPU µs/msg", "CPU", "cli CPU µs/msg", "other CPU", "errors")
}

func (r *report) addBatchPair(w io.Writer, p batchPair) {
	p.Ratio = p.API.PerSecond / p.Direct.PerSecond
	r.Batch.Pairs = append(r.Batch.Pairs, p)
	var ratios, clean []float64
	for _, p := range r.Batch.Pairs {
		ratios = append(ratios, p.Ratio)
		if !noisy(p.API) && !noisy(p.Direct) {
			clean = append(clean, p.Ratio)
		}
	}
	r.Batch.MedianRatio, r.Batch.CleanPairs, r.Batch.CleanRatio = median(ratios), len(clean), medianOrNil(clean)
	r.Batch.Pass = r.Batch.MedianRatio >= targetBatchRatio
	fmt.Fprintf(w, "      api/direct = %.2f\n", p.Ratio)
}

func (r *report) batchFooter(w io.Writer) {
	b := r.Batch
	fmt.Fprintf(w, "median of %d per-pair ratios api/direct: %.2f   target >= %.1f: %s\n",
		len(b.Pairs), b.MedianRatio, b.Target, verdict(b.Pass))
	cleanLine(w, b.CleanRatio, b.CleanPairs, len(b.Pairs))
}

func (r *report) setPaging(w io.Writer, p pagingResult) {
	r.Paging = pagingReport{pagingResult: p, Target: targetPageRatio, Pass: p.RatioP50 <= targetPageRatio}
	fmt.Fprintf(w, "\n(e) paging: %d messages in one session, filled through the API in %d-message batches in %.1fs;\n",
		p.Messages, batchSize, p.FillSecs)
	fmt.Fprintf(w, "the server then worked on for %.1fs (background work: search indexing) before reads were timed;\n", p.SettleSecs)
	fmt.Fprintf(w, "GET …/messages?limit=%d, %d timed reads of each page, alternating, one client\n", pageSize, p.Reps)
	fmt.Fprintf(w, "%-18s %8s %8s\n", "page", "p50 ms", "p99 ms")
	fmt.Fprintf(w, "%-18s %8.2f %8.2f\n", "after_seq=0", p.FirstP50Ms, p.FirstP99Ms)
	fmt.Fprintf(w, "%-18s %8.2f %8.2f\n", fmt.Sprintf("after_seq=%d", p.DeepAfter), p.DeepP50Ms, p.DeepP99Ms)
	fmt.Fprintf(w, "deep/first (p50): %.2f   target <= %.1f: %s\n", p.RatioP50, targetPageRatio, verdict(r.Paging.Pass))
}

func (r *report) summary(w io.Writer) {
	fmt.Fprintln(w, "\nsummary")
	if len(r.Appends.Pairs) > 0 {
		fmt.Fprintf(w, "  appends   logbook/naive      %6.2f  (target >= %.1f)  %s\n", r.Appends.MedianRatio, targetAppendRatio, verdict(r.Appends.Pass))
	}
	if pb := r.Appends.PocketBase; pb != nil && len(r.Appends.Pairs) > 0 {
		fmt.Fprintf(w, "  appends   logbook/pocketbase %6.2f  (target >= %.1f)  %s\n", pb.MedianRatio, pb.Target, verdict(pb.Pass))
	}
	if len(r.Batch.Pairs) > 0 {
		fmt.Fprintf(w, "  batch     api/direct SQLite  %6.2f  (target >= %.1f)  %s\n", r.Batch.MedianRatio, targetBatchRatio, verdict(r.Batch.Pass))
	}
	if r.Paging.RatioP50 > 0 {
		fmt.Fprintf(w, "  paging    deep/first page    %6.2f  (target <= %.1f)  %s\n", r.Paging.RatioP50, targetPageRatio, verdict(r.Paging.Pass))
	}
	r.pageReadsSummary(w)
	r.contextSummary(w)
	r.postgresSummary(w)
	if st := r.Stream; st != nil {
		fmt.Fprintf(w, "  stream    CPU µs per message %6.1f  (target <= %.0f)  %s;  logbook/floor %.2f",
			st.MedianCPU, targetStreamCPU, verdict(st.Pass), st.FloorCPU)
		if st.VsSingle != nil {
			fmt.Fprintf(w, ";  %.2f of a single append's", *st.VsSingle)
		}
		fmt.Fprintln(w)
	}
	if f := r.Fairness; f != nil {
		fmt.Fprintf(w, "  fairness  B p99 with A/alone %6.2f  (target <= %.1f)  %s\n", f.Ratio, targetFairnessRatio, verdict(f.Pass))
	}
	if len(r.Appends.Pairs) > 0 {
		a := r.Appends
		if a.FloorCPU > 0 {
			fmt.Fprintf(w, "  appends   CPU ÷ floor        %6.2f  (target <= %.1f)  %s\n", a.FloorCPU, targetFloorAppend, verdict(a.FloorCPUPass))
		}
		fmt.Fprintf(w, "  appends   p99 ms             %6.2f  (target <= %.0f)  %s\n", a.P99Ms, targetAppendP99, verdict(a.P99Pass))
		lb, nv, fl, pb := medianCPU(a.Pairs)
		fmt.Fprintf(w, "  CPU per single append (median of rounds): logbook %s µs, naive %s µs", cpuCell(lb), cpuCell(nv))
		if fl != nil {
			fmt.Fprintf(w, ", floor %s µs", cpuCell(*fl))
		}
		if pb != nil {
			fmt.Fprintf(w, ", pocketbase %s µs", cpuCell(*pb))
		}
		fmt.Fprintln(w)
	}
	if len(r.Noisy) > 0 {
		fmt.Fprintf(w, "  warning: other work used more than %.0f%% of a core during %d rounds: %s;\n",
			noisyOtherCPU, len(r.Noisy), strings.Join(r.Noisy, ", "))
		fmt.Fprintln(w, "  their figures understate this machine; rerun when it is idle")
	}
}

// medianCPU is each server's median CPU per append; pocketbase is nil when it
// did not run.
func medianCPU(pairs []appendPair) (logbook, naive float64, floor, pocketbase *float64) {
	var a, b, c, d []float64
	for _, p := range pairs {
		a = append(a, p.Logbook.ServerCPU)
		b = append(b, p.Naive.ServerCPU)
		if p.Floor != nil {
			c = append(c, p.Floor.ServerCPU)
		}
		if p.PocketBase != nil {
			d = append(d, p.PocketBase.ServerCPU)
		}
	}
	return median(a), median(b), medianOrNil(c), medianOrNil(d)
}

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "MISS"
}

// median of an even count is the mean of the middle two.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func mustIndentJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}
