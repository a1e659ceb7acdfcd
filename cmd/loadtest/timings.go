package main

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// latencies summarizes one kind of request of a run.
type latencies struct {
	Count  int     `json:"count"` // successful requests
	Errors int     `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// span is when a request was due and when its answer was read.
type span struct{ start, end time.Time }

// timings collects the spans of concurrent requests: when they ran tells which
// of one tenant's requests overlapped another's.
type timings struct {
	mu       sync.Mutex
	spans    []span // of successful requests
	errors   int
	firstErr error
}

// add records a request that was due at start and has just ended.
func (t *timings) add(start time.Time, err error) {
	end := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.errors++
		if t.firstErr == nil {
			t.firstErr = err
		}
		return
	}
	t.spans = append(t.spans, span{start, end})
}

func (t *timings) latencies() latencies {
	t.mu.Lock()
	defer t.mu.Unlock()
	lat := make([]time.Duration, len(t.spans))
	for i, s := range t.spans {
		lat[i] = s.end.Sub(s.start)
	}
	slices.Sort(lat)
	l := latencies{Count: len(lat), Errors: t.errors, P50Ms: ms(percentile(lat, 50)), P99Ms: ms(percentile(lat, 99))}
	if len(lat) > 0 {
		l.MaxMs = ms(lat[len(lat)-1])
	}
	return l
}

// summary is latencies, with a warning on stderr of failed requests as measure
// gives, and an error when none succeeded: there would be no figure to show.
func (t *timings) summary(what string) (latencies, error) {
	l := t.latencies()
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.Count == 0 {
		return l, fmt.Errorf("%s: no request succeeded (%d failed): %v", what, t.errors, t.firstErr)
	}
	if t.errors > 0 {
		fmt.Fprintf(os.Stderr, "  warning: %s: %d of %d requests failed; first: %v\n", what, t.errors, t.errors+l.Count, t.firstErr)
	}
	return l, nil
}

// apart is t's successful requests that overlapped none of other's.
func (t *timings) apart(other *timings) *timings {
	other.mu.Lock()
	busy := slices.Clone(other.spans)
	other.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := &timings{}
	for _, s := range t.spans {
		if !slices.ContainsFunc(busy, func(b span) bool { return b.start.Before(s.end) && s.start.Before(b.end) }) {
			out.spans = append(out.spans, s)
		}
	}
	return out
}
