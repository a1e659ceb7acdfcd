package main

import (
	"fmt"
	"io"
	"strings"
)

// contextReport is the context section: one session, its reads timed with one
// client, then under several.
type contextReport struct {
	Messages   int           `json:"messages"`
	ThroughSeq int           `json:"compaction_through_seq"`
	MaxTokens  int           `json:"max_tokens"`
	Reps       int           `json:"reps"`
	Clients    int           `json:"clients"`
	FillSecs   float64       `json:"fill_seconds"`
	SettleSecs float64       `json:"settle_seconds"`
	Reads      []contextRead `json:"reads"`
	TargetMs   float64       `json:"target_p50_max_ms"`
	// Pass is every context read's p50 with one client within TargetMs.
	Pass bool `json:"pass"`
}

// contextRead is one read's figures. Pass is nil for the page, which is there
// to read the others against, not held to the goal.
type contextRead struct {
	Name     string  `json:"name"`
	Request  string  `json:"request"`
	Goal     bool    `json:"held_to_goal"`
	Messages int     `json:"messages"` // in one answer
	Bytes    int     `json:"bytes"`
	P50Ms    float64 `json:"p50_ms"` // one client
	P99Ms    float64 `json:"p99_ms"`
	Pass     *bool   `json:"pass,omitempty"`
	Rounds   []stats `json:"rounds"` // several clients
	// PerSecond and CPU (server µs per read, -1 when unavailable) are medians
	// over the rounds.
	PerSecond float64 `json:"median_reads_per_second"`
	CPU       float64 `json:"median_server_cpu_us_per_read"`
	// FloorRounds are the floor's rounds of the same read (floor.go), on a
	// copy of the same database; FloorCPU the median of the rounds' CPU
	// ratios Logbook ÷ floor, 0 for a read the floor does not answer.
	FloorRounds []stats `json:"floor_rounds,omitempty"`
	FloorCPU    float64 `json:"cpu_ratio_floor,omitempty"`
	FloorPass   *bool   `json:"cpu_ratio_floor_pass,omitempty"`
}

func (r *report) setContext(w io.Writer, c *contextReport) {
	r.Context = c
	c.Pass = true
	for i := range c.Reads {
		rd := &c.Reads[i]
		rd.CPU = -1
		if rd.Goal {
			pass := rd.P50Ms <= c.TargetMs
			rd.Pass = &pass
			c.Pass = c.Pass && pass
		}
	}
	fmt.Fprintln(w, "\n(g) context reads: GET /v1/sessions/{id}/context, what the next LLM call needs, read before every call.")
	fmt.Fprintf(w, "%d messages in one session (a system prompt, then user/assistant turns of 100-400 characters,\n", c.Messages)
	fmt.Fprintf(w, "20-200 tokens each) through the API in batches of up to %d, compacted through seq %d with a %d-token\n",
		batchSize, c.ThroughSeq, contextSummaryTk)
	fmt.Fprintf(w, "summary, in %.1fs; the server then worked on for %.1fs (search indexing) before reads were timed\n",
		c.FillSecs, c.SettleSecs)
	fmt.Fprintf(w, "ctx-4k   = GET …/context?max_tokens=%d (the system prompt, the summary, the newest turns that fit)\n", c.MaxTokens)
	fmt.Fprintf(w, "ctx-all  = GET …/context (the summary and all %d messages after it)\n", c.Messages-c.ThroughSeq)
	fmt.Fprintf(w, "ctx-4k+b = GET …/context?max_tokens=%d&include=blocks (and the agent's %d core memory blocks)\n",
		c.MaxTokens, len(contextBlocks))
	fmt.Fprintf(w, "page-50  = GET …/messages?limit=%d, the first page: a known read to set the others against\n", contextPageSize)
	fmt.Fprintf(w, "one client, %d timed reads of each in turn, every answer checked outside the timed part\n", c.Reps)
	fmt.Fprintf(w, "%-10s %6s %8s %8s %8s  %s\n", "read", "msgs", "KiB", "p50 ms", "p99 ms", fmt.Sprintf("p50 <= %g ms", c.TargetMs))
	for _, rd := range c.Reads {
		v := ""
		if rd.Pass != nil {
			v = verdict(*rd.Pass)
		}
		fmt.Fprintf(w, "%-10s %6d %8.1f %8.2f %8.2f  %s\n", rd.Name, rd.Messages, float64(rd.Bytes)/1024, rd.P50Ms, rd.P99Ms, v)
	}
}

func (r *report) contextRoundsHeader(w io.Writer, o options) {
	fmt.Fprintf(w, "\n(g2) concurrent context reads: %d clients reading one read back to back, %s per round and read,\n",
		o.contextClients, o.duration)
	fmt.Fprintln(w, "each round every read in turn; the timed reads check only the status")
	fmt.Fprintf(w, "%-5s %-*s %10s %8s %8s %14s %8s %14s %9s %6s\n",
		"round", r.nameWidth(), "read", "reads/s", "p50 ms", "p99 ms", "srv CPU µs/rd", "srv CPU", "cli CPU µs/rd", "other CPU", "errors")
}

// addContextRound adds read i's round, and the floor's when it answers the
// read, and updates its medians.
func (r *report) addContextRound(w io.Writer, round, i int, s stats, floor *stats) {
	rd := &r.Context.Reads[i]
	r.rowOf(w, "context ", round, rd.Name, s)
	rd.Rounds = append(rd.Rounds, s)
	if floor != nil {
		r.rowOf(w, "context floor ", round, "floor", *floor)
		rd.FloorRounds = append(rd.FloorRounds, *floor)
		fmt.Fprintf(w, "      logbook/floor server CPU per read = %.2f\n", cpuRatio(s.ServerCPU, floor.ServerCPU))
	}
	var per, cpu, ratios []float64
	for k, s := range rd.Rounds {
		per, cpu = append(per, s.PerSecond), append(cpu, s.ServerCPU)
		if k < len(rd.FloorRounds) {
			if x := cpuRatio(s.ServerCPU, rd.FloorRounds[k].ServerCPU); x > 0 {
				ratios = append(ratios, x)
			}
		}
	}
	rd.PerSecond, rd.CPU = median(per), median(cpu)
	if len(ratios) > 0 {
		rd.FloorCPU = median(ratios)
		pass := rd.FloorCPU <= targetFloorRead
		rd.FloorPass = &pass
	}
}

func (r *report) contextFooter(w io.Writer) {
	c := r.Context
	page := c.Reads[len(c.Reads)-1]
	fmt.Fprintf(w, "%-18s %10s %16s %14s %14s\n", fmt.Sprintf("median of %d rounds", len(page.Rounds)), "reads/s",
		"srv CPU µs/read", "÷ "+page.Name+"'s", "÷ floor's")
	for _, rd := range c.Reads {
		ratio, floor := "n/a", "n/a"
		if rd.CPU > 0 && page.CPU > 0 {
			ratio = fmt.Sprintf("%.2f", rd.CPU/page.CPU)
		}
		if rd.FloorPass != nil {
			floor = fmt.Sprintf("%.2f %s", rd.FloorCPU, verdict(*rd.FloorPass))
		}
		fmt.Fprintf(w, "%-18s %10.0f %16s %14s %14s\n", rd.Name, rd.PerSecond, cpuCell(rd.CPU), ratio, floor)
	}
	fmt.Fprintf(w, "(÷ floor's: the median of the rounds' ratios of server CPU per read, target <= %.1f)\n", targetFloorRead)
	var verdicts []string
	for _, rd := range c.Reads {
		if rd.Pass != nil {
			verdicts = append(verdicts, rd.Name+" "+verdict(*rd.Pass))
		}
	}
	fmt.Fprintf(w, "goal: a context read of a %d-message session in <= %g ms (p50, one client): %s\n",
		c.Messages, c.TargetMs, strings.Join(verdicts, ", "))
}

func (r *report) contextSummary(w io.Writer) {
	c := r.Context
	if c == nil {
		return
	}
	for _, rd := range c.Reads {
		if rd.Pass != nil {
			fmt.Fprintf(w, "  context   %-18s %6.2f  (target <= %g)  %s\n", rd.Name+" p50 ms", rd.P50Ms, c.TargetMs, verdict(*rd.Pass))
		}
	}
	for _, rd := range c.Reads {
		if rd.FloorPass != nil {
			fmt.Fprintf(w, "  context   %-18s %6.2f  (target <= %.1f)  %s\n", rd.Name+" CPU ÷ floor", rd.FloorCPU, targetFloorRead, verdict(*rd.FloorPass))
		}
	}
}
