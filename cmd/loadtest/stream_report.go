package main

import (
	"fmt"
	"io"
)

// streamReport is the NDJSON streaming appends: the same messages as the
// single appends, one connection per client for the whole round.
type streamReport struct {
	Clients int     `json:"clients"`
	Rounds  []stats `json:"rounds"`
	// MedianCPU is the server's CPU per message, the median over the rounds;
	// VsSingle is it ÷ the single appends' median, when those ran too.
	MedianCPU float64  `json:"median_server_cpu_us_per_msg"`
	VsSingle  *float64 `json:"cpu_ratio_vs_single_appends,omitempty"`
}

func (r *report) streamHeader(w io.Writer, o options) {
	r.Stream = &streamReport{Clients: o.clients}
	fmt.Fprintf(w, "\n(s) NDJSON streaming appends, %s per round: %d clients, one stream and session each,\n", o.duration, o.clients)
	fmt.Fprintln(w, "each sending one message and reading its answer before the next (p50/p99 per message)")
	fmt.Fprintf(w, "%-5s %-*s %10s %8s %8s %14s %8s %14s %9s %6s\n",
		"round", r.nameWidth(), "server", "msgs/s", "p50 ms", "p99 ms", "CPU µs/msg", "CPU", "cli CPU µs/msg", "other CPU", "errors")
}

func (r *report) addStreamRound(w io.Writer, round int, s stats) {
	r.rowOf(w, "stream ", round, "logbook", s)
	r.Stream.Rounds = append(r.Stream.Rounds, s)
}

func (r *report) streamFooter(w io.Writer) {
	st := r.Stream
	var cpu []float64
	for _, s := range st.Rounds {
		cpu = append(cpu, s.ServerCPU)
	}
	st.MedianCPU = median(cpu)
	fmt.Fprintf(w, "server CPU per streamed message (median of %d rounds): %s µs", len(cpu), cpuCell(st.MedianCPU))
	if len(r.Appends.Pairs) > 0 {
		single, _, _ := medianCPU(r.Appends.Pairs)
		if single > 0 && st.MedianCPU > 0 {
			ratio := st.MedianCPU / single
			st.VsSingle = &ratio
			fmt.Fprintf(w, ", %.2f of a single append's %.1f µs", ratio, single)
		}
	}
	fmt.Fprintln(w)
}
