package main

import (
	"fmt"
	"io"
)

type fairnessReport struct {
	fairnessResult
	Target float64 `json:"target_max"`
	Pass   bool    `json:"pass"`
}

func (r *report) setFairness(w io.Writer, f fairnessResult) {
	r.Fairness = &fairnessReport{fairnessResult: f, Target: targetFairnessRatio, Pass: f.Ratio <= targetFairnessRatio}
	fmt.Fprintf(w, "\n(f) fairness: tenant B's single appends alone, then while tenant A appends big messages; one server,\n")
	fmt.Fprintf(w, "%.0fs per phase. B: %d clients, open loop (each sends when due, answered or not), one ~200-byte\n",
		f.PhaseSeconds, f.BClients)
	fmt.Fprintf(w, "message every %d-%d ms at random, latency from when the send was due. A: bursts of %d messages of\n",
		f.BGapMinMs, f.BGapMaxMs, f.ABurst)
	fmt.Fprintf(w, "%d KiB of random words back to back, then %d ms pause; search indexes when the writer is idle\n",
		f.AContentBytes>>10, f.APauseMs)
	fmt.Fprintf(w, "%-24s %6s %6s %8s %8s %8s %9s\n", "appends", "count", "errors", "p50 ms", "p99 ms", "max ms", "other CPU")
	for _, row := range []struct {
		name  string
		l     latencies
		other string // the last two share B with A's phase and its figure
	}{{"B alone", f.BAlone, pctCell(f.OtherCPUAlone, f.OtherCPUAlone)},
		{"B with A", f.BWithA, pctCell(f.OtherCPUWithA, f.OtherCPUWithA)},
		{"  no A append in flight", f.BApart, ""}, {"A", f.A, ""}} {
		fmt.Fprintf(w, "%-24s %6d %6d %8.2f %8.2f %8.2f %9s\n", row.name, row.l.Count, row.l.Errors,
			row.l.P50Ms, row.l.P99Ms, row.l.MaxMs, row.other)
	}
	for _, p := range []struct {
		name  string
		other float64
	}{{"fairness B alone", f.OtherCPUAlone}, {"fairness B with A", f.OtherCPUWithA}} {
		if p.other > noisyOtherCPU {
			r.Noisy = append(r.Noisy, fmt.Sprintf("%s (%.0f%%)", p.name, p.other))
		}
	}
	fmt.Fprintf(w, "A appended %.0f MiB of words in %d messages. \"no A append in flight\": B's appends that overlapped\n", f.AMiB, f.A.Count)
	fmt.Fprintln(w, "none of A's; the others may wait for an A append's own commit, which one writer cannot avoid")
	fmt.Fprintf(w, "B p99 with A / alone: %.2f   target <= %.1f: %s\n", f.Ratio, targetFairnessRatio, verdict(r.Fairness.Pass))
	// With a few hundred latencies, p99 is one of the last few: say so, since a
	// single stall of the disk or the machine then moves it.
	fmt.Fprintf(w, "(B's p99 is its %s latency alone, its %s with A)\n",
		largest(rankFromTop(f.BAlone.Count, 99)), largest(rankFromTop(f.BWithA.Count, 99)))
	found := "found"
	if !f.Found {
		found = "NOT found"
	}
	if f.CaughtUp {
		fmt.Fprintf(w, "search caught up %.1fs after the load stopped (index_lag %d at the stop, then 0); A's last message's last word %s\n",
			f.CatchUpSecs, f.IndexLagAtStop, found)
	} else {
		fmt.Fprintf(w, "search did NOT catch up within %.0fs after the load stopped: index_lag %d at the stop, still %d; A's last word %s\n",
			f.CatchUpSecs, f.IndexLagAtStop, f.IndexLag, found)
	}
}

// rankFromTop is which largest of n values percentile(…, p) picks.
func rankFromTop(n int, p float64) int { return n - nearestRank(n, p) }

// largest names the k-th largest: "largest", "2nd largest", …
func largest(k int) string {
	if k == 1 {
		return "largest"
	}
	return ordinal(k) + " largest"
}

func ordinal(n int) string {
	switch {
	case n%100/10 == 1:
		return fmt.Sprintf("%dth", n)
	case n%10 == 1:
		return fmt.Sprintf("%dst", n)
	case n%10 == 2:
		return fmt.Sprintf("%dnd", n)
	case n%10 == 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}
