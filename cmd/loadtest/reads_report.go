package main

import (
	"fmt"
	"io"
)

// pageReadPair is one round of concurrent page reads on Logbook and, with
// -pocketbase, on PocketBase right after it.
type pageReadPair struct {
	Round      int     `json:"round"`
	Logbook    stats   `json:"logbook"`
	PocketBase *stats  `json:"pocketbase,omitempty"`
	PBRatio    float64 `json:"ratio_pocketbase,omitempty"` // pages/s logbook ÷ pocketbase
	// Floor read a copy of the same session (floor.go); FloorCPU is
	// Logbook's server CPU per page ÷ the floor's.
	Floor    *stats  `json:"floor,omitempty"`
	FloorCPU float64 `json:"cpu_ratio_floor,omitempty"`
}

type pageReadsReport struct {
	Clients  int            `json:"clients"`
	Messages int            `json:"messages"`
	Pairs    []pageReadPair `json:"rounds"`
	// CPUPerPage is the median over the rounds of Logbook's server CPU per page;
	// -1 when the CPU could not be read.
	CPUPerPage float64       `json:"logbook_server_cpu_us_per_page"`
	CPUTarget  float64       `json:"cpu_target_max_us"`
	CPUPass    bool          `json:"cpu_pass"`
	PocketBase *versusReport `json:"pocketbase,omitempty"`
	PBFill     *pbFillResult `json:"pocketbase_fill,omitempty"`
	// FloorCPU is the median of the rounds' CPU ratios Logbook ÷ floor.
	FloorCPU     float64 `json:"cpu_ratio_floor"`
	FloorCPUPass bool    `json:"cpu_ratio_floor_pass"`
}

func (r *report) pageReadsHeader(w io.Writer, o options, messages int, fill *pbFillResult) {
	r.Paging.Reads = &pageReadsReport{Clients: o.pagingClients, Messages: messages, CPUPerPage: -1, CPUTarget: targetPageCPU,
		PBFill: fill}
	fmt.Fprintf(w, "\n(e2) concurrent page reads of that session: %d clients, %s per round, each reading pages of %d back to back,\n",
		o.pagingClients, o.duration, pageSize)
	fmt.Fprintln(w, "starting pages spread over the whole session; each client checks its first page, the timed reads only the status")
	fmt.Fprintf(w, "logbook    = GET /v1/sessions/{id}/messages?after_seq=N&limit=%d\n", pageSize)
	fmt.Fprintln(w, "floor      = the same on floor.go, on a copy of Logbook's database (logbook backup) made after the fill")
	if fill != nil {
		r.Paging.Reads.PocketBase = &versusReport{Target: targetPBPageRatio}
		fmt.Fprintf(w, "pocketbase = GET /api/collections/%s/records?filter=(session='…' && seq>N)&sort=seq&perPage=%d&skipTotal=1\n",
			pbCollection, pageSize)
		fmt.Fprintln(w, "  (skipTotal=1: no COUNT(*) for totalItems, since Logbook's pages count nothing either)")
		fmt.Fprintf(w, "  filled with the same %d records, session and seq 1..%d, through /api/batch (enabled in its settings),\n",
			fill.Records, fill.Records)
		fmt.Fprintf(w, "  %d creates per request, in %.1fs; it then worked on for %.1fs before reads were timed\n",
			fill.PerRequest, fill.FillSecs, fill.SettleSecs)
	}
	fmt.Fprintf(w, "%-5s %-*s %10s %8s %8s %14s %8s %14s %9s %6s\n",
		"round", r.nameWidth(), "server", "pages/s", "p50 ms", "p99 ms", "srv CPU µs/pg", "srv CPU", "cli CPU µs/pg", "other CPU", "errors")
}

func (r *report) addPageReadPair(w io.Writer, p pageReadPair) {
	rr := r.Paging.Reads
	if p.PocketBase != nil {
		p.PBRatio = p.Logbook.PerSecond / p.PocketBase.PerSecond
	}
	if p.Floor != nil {
		p.FloorCPU = cpuRatio(p.Logbook.ServerCPU, p.Floor.ServerCPU)
		fmt.Fprintf(w, "      logbook/floor server CPU per page = %.2f\n", p.FloorCPU)
	}
	rr.Pairs = append(rr.Pairs, p)
	var cpu, ratios, clean, floor []float64
	for _, p := range rr.Pairs {
		cpu = append(cpu, p.Logbook.ServerCPU)
		if p.FloorCPU > 0 {
			floor = append(floor, p.FloorCPU)
		}
		if p.PocketBase == nil {
			continue
		}
		ratios = append(ratios, p.PBRatio)
		if !noisy(p.Logbook) && !noisy(*p.PocketBase) {
			clean = append(clean, p.PBRatio)
		}
	}
	rr.CPUPerPage = median(cpu)
	rr.CPUPass = cpuWithin(rr.CPUPerPage, targetPageCPU)
	rr.FloorCPU = median(floor)
	rr.FloorCPUPass = len(floor) > 0 && rr.FloorCPU <= targetFloorRead
	if p.PocketBase != nil {
		rr.PocketBase = versus(ratios, clean, targetPBPageRatio)
		fmt.Fprintf(w, "      logbook/pocketbase = %.2f\n", p.PBRatio)
	}
}

// cpuWithin is a CPU target's verdict; a figure that could not be read (-1)
// meets none.
func cpuWithin(us, target float64) bool { return us >= 0 && us <= target }

func (r *report) pageReadsFooter(w io.Writer) {
	rr := r.Paging.Reads
	fmt.Fprintf(w, "logbook server CPU per page, median of %d rounds: %s µs   target <= %.0f µs: %s\n",
		len(rr.Pairs), cpuCell(rr.CPUPerPage), rr.CPUTarget, verdict(rr.CPUPass))
	if rr.FloorCPU > 0 {
		fmt.Fprintf(w, "median of %d per-round ratios logbook/floor server CPU per page: %.2f   target <= %.1f: %s\n",
			len(rr.Pairs), rr.FloorCPU, targetFloorRead, verdict(rr.FloorCPUPass))
	}
	if pb := rr.PocketBase; pb != nil {
		fmt.Fprintf(w, "median of %d per-round ratios logbook/pocketbase pages/s: %.2f   target >= %.1f: %s\n",
			len(rr.Pairs), pb.MedianRatio, pb.Target, verdict(pb.Pass))
		cleanLine(w, pb.CleanRatio, pb.CleanPairs, len(rr.Pairs))
	}
}

func (r *report) pageReadsSummary(w io.Writer) {
	rr := r.Paging.Reads
	if rr == nil || len(rr.Pairs) == 0 {
		return
	}
	fmt.Fprintf(w, "  paging    CPU µs per page    %6s  (target <= %.0f)  %s\n",
		cpuCell(rr.CPUPerPage), rr.CPUTarget, verdict(rr.CPUPass))
	if rr.FloorCPU > 0 {
		fmt.Fprintf(w, "  paging    CPU ÷ floor        %6.2f  (target <= %.1f)  %s\n", rr.FloorCPU, targetFloorRead, verdict(rr.FloorCPUPass))
	}
	if pb := rr.PocketBase; pb != nil {
		fmt.Fprintf(w, "  paging    logbook/pocketbase %6.2f  (target >= %.1f)  %s\n", pb.MedianRatio, pb.Target, verdict(pb.Pass))
	}
}
