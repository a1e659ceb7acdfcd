package main

import (
	"fmt"
	"io"
)

// streamReport is the NDJSON streaming appends: the same messages as the
// single appends, one connection per client for the whole round, several
// lines in flight on each, on Logbook and on the floor in turn.
type streamReport struct {
	Clients int     `json:"clients"`
	Window  int     `json:"lines_in_flight"`
	Rounds  []stats `json:"rounds"`
	Floor   []stats `json:"floor_rounds"`
	// MedianCPU is Logbook's server CPU per message, the median over the
	// rounds, against targetStreamCPU; FloorCPU is the median of the rounds'
	// ratios Logbook ÷ floor; VsSingle is MedianCPU ÷ the single appends'
	// median, when those ran too.
	MedianCPU float64  `json:"median_server_cpu_us_per_msg"`
	Pass      bool     `json:"cpu_pass"`
	FloorCPU  float64  `json:"cpu_ratio_floor"`
	VsSingle  *float64 `json:"cpu_ratio_vs_single_appends,omitempty"`
}

func (r *report) streamHeader(w io.Writer, o options) {
	r.Stream = &streamReport{Clients: o.clients, Window: o.streamWindow}
	fmt.Fprintf(w, "\n(s) NDJSON streaming appends, %s per round: %d clients, one stream and session each, each sending\n", o.duration, o.clients)
	fmt.Fprintf(w, "%d lines at once and reading their answers before the next %[1]d (p50/p99 per %[1]d lines); floor = floor.go's stream\n", o.streamWindow)
	fmt.Fprintf(w, "%-5s %-*s %10s %8s %8s %14s %8s %14s %9s %6s\n",
		"round", r.nameWidth(), "server", "msgs/s", "p50 ms", "p99 ms", "CPU µs/msg", "CPU", "cli CPU µs/msg", "other CPU", "errors")
}

func (r *report) addStreamRound(w io.Writer, round int, s, floor stats) {
	r.rowOf(w, "stream ", round, "logbook", s)
	r.rowOf(w, "stream ", round, "floor", floor)
	r.Stream.Rounds = append(r.Stream.Rounds, s)
	r.Stream.Floor = append(r.Stream.Floor, floor)
	fmt.Fprintf(w, "      logbook/floor server CPU per message = %.2f\n", cpuRatio(s.ServerCPU, floor.ServerCPU))
}

func (r *report) streamFooter(w io.Writer) {
	st := r.Stream
	var cpu, ratios []float64
	for i, s := range st.Rounds {
		cpu = append(cpu, s.ServerCPU)
		if x := cpuRatio(s.ServerCPU, st.Floor[i].ServerCPU); x > 0 {
			ratios = append(ratios, x)
		}
	}
	st.MedianCPU, st.FloorCPU = median(cpu), median(ratios)
	st.Pass = cpuWithin(st.MedianCPU, targetStreamCPU)
	fmt.Fprintf(w, "server CPU per streamed message (median of %d rounds): %s µs   target <= %.0f: %s; logbook/floor %.2f",
		len(cpu), cpuCell(st.MedianCPU), targetStreamCPU, verdict(st.Pass), st.FloorCPU)
	if len(r.Appends.Pairs) > 0 {
		single, _, _, _ := medianCPU(r.Appends.Pairs)
		if single > 0 && st.MedianCPU > 0 {
			ratio := st.MedianCPU / single
			st.VsSingle = &ratio
			fmt.Fprintf(w, "; %.2f of a single append's %.1f µs", ratio, single)
		}
	}
	fmt.Fprintln(w)
}
