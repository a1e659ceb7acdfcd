package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

// newClient keeps one connection per concurrent client alive across requests, so
// that what is measured is the server's work per request, not TCP handshakes. Proxy
// is nil: the traffic never leaves 127.0.0.1.
func newClient() *http.Client {
	return &http.Client{
		Timeout: time.Minute,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        128,
			MaxIdleConnsPerHost: 128,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
}

// post sends body and reads the whole answer (a half-read body would cost the
// connection its keep-alive). Any status but want is an error.
func post(ctx context.Context, c *http.Client, url string, body []byte, want int) error {
	return postAs(ctx, c, url, "", body, want)
}

// postAs is post with an API key, which says the tenant; with key "" it sends
// none, as a server in open mode (no key exists) expects.
func postAs(ctx context.Context, c *http.Client, url, key string, body []byte, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	authorize(req, key)
	return do(c, req, want, io.Discard)
}

func authorize(req *http.Request, key string) {
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
}

func do(c *http.Client, req *http.Request, want int, dst io.Writer) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("%s %s: status %d, want %d: %s", req.Method, req.URL.Path, resp.StatusCode, want, bytes.TrimSpace(b))
	}
	_, err = io.Copy(dst, resp.Body)
	return err
}

// loadResult is what a fixed-duration run of concurrent clients did.
type loadResult struct {
	ok       int
	errors   int
	firstErr error
	elapsed  time.Duration
	lat      []time.Duration // of successful requests, sorted
}

// runLoad has clients goroutines call op back to back until d has passed, each
// finishing the request it is in. The elapsed time runs until the last one
// finished, so requests that straddle the deadline are counted over their time.
func runLoad(ctx context.Context, clients int, d time.Duration, op func(ctx context.Context, client int) error) loadResult {
	var (
		mu  sync.Mutex
		res loadResult
		wg  sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<12)
			var nerr int
			var firstErr error
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				if err := op(ctx, i); err != nil {
					if ctx.Err() != nil {
						break
					}
					nerr++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			res.lat = append(res.lat, lat...)
			res.errors += nerr
			if res.firstErr == nil {
				res.firstErr = firstErr
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.ok = len(res.lat)
	slices.Sort(res.lat)
	return res
}

// percentile is the nearest-rank percentile (0 < p <= 100) of sorted: the
// smallest value that at least p% of the values are less than or equal to.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[nearestRank(len(sorted), p)]
}

// nearestRank is the index of the p-th percentile among n sorted values (n > 0).
func nearestRank(n int, p float64) int {
	i := int(math.Ceil(p/100*float64(n))) - 1
	return max(0, min(i, n-1))
}

// stats is one measured run, in the units the report prints.
type stats struct {
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"per_second"` // requests × unit per second
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	ServerCPU  float64 `json:"server_cpu_us_per_unit"` // -1 when unavailable
	ClientCPU  float64 `json:"client_cpu_us_per_unit"` // the load tool's own CPU
	CPUPercent float64 `json:"server_cpu_percent"`     // of one core
	// OtherCPU is what everything else on the machine used meanwhile, in % of one
	// core: more than a few % means the round competed with something.
	OtherCPU float64 `json:"other_cpu_percent"`
	// DBCPU and DBCPUPercent are PostgreSQL's processes' CPU, with a server on
	// PostgreSQL; 0 on SQLite, which runs inside the server; -1 when unavailable.
	DBCPU        float64 `json:"db_cpu_us_per_unit,omitempty"`
	DBCPUPercent float64 `json:"db_cpu_percent,omitempty"`
}

// measure runs the load while reading the CPU the process pid (the server, or
// this tool itself for the direct baseline) and this tool spend on it. unit is how
// many items (messages) one request carries.
func measure(ctx context.Context, pid, clients int, d time.Duration, unit int, op func(ctx context.Context, client int) error) (stats, error) {
	return measureProcs(ctx, []int{pid}, nil, clients, d, unit, op)
}

// cpuReader reads a CPU total that only ever grows.
type cpuReader func() (time.Duration, error)

// measureProcs is measure with the server's CPU summed over pids (several
// server processes share one database) and, when db is not nil, the CPU of a
// database that runs in processes of its own (PostgreSQL's): that is part of
// what an append costs, reported apart, and not counted as other work.
func measureProcs(ctx context.Context, pids []int, db cpuReader, clients int, d time.Duration, unit int,
	op func(ctx context.Context, client int) error) (stats, error) {
	self := os.Getpid()
	servers := func() (time.Duration, error) {
		var total time.Duration
		for _, pid := range pids {
			t, err := cpuTime(pid)
			if err != nil {
				return 0, err
			}
			total += t
		}
		return total, nil
	}
	if db == nil {
		db = func() (time.Duration, error) { return 0, nil }
	}
	s0, serr := servers()
	d0, derr := db()
	c0, cerr := cpuTime(self)
	m0, merr := machineBusy()
	r := runLoad(ctx, clients, d, op)
	s1, serr1 := servers()
	d1, derr1 := db()
	c1, cerr1 := cpuTime(self)
	m1, merr1 := machineBusy()
	if ctx.Err() != nil {
		return stats{}, ctx.Err()
	}
	if r.ok == 0 {
		return stats{}, fmt.Errorf("no request succeeded (%d failed): %v", r.errors, r.firstErr)
	}
	if r.errors > 0 {
		fmt.Fprintf(os.Stderr, "  warning: %d of %d requests failed; first: %v\n", r.errors, r.errors+r.ok, r.firstErr)
	}
	items := float64(r.ok * unit)
	st := stats{
		Requests:  r.ok,
		Errors:    r.errors,
		Seconds:   r.elapsed.Seconds(),
		PerSecond: items / r.elapsed.Seconds(),
		P50Ms:     ms(percentile(r.lat, 50)),
		P99Ms:     ms(percentile(r.lat, 99)),
		ServerCPU: -1,
		ClientCPU: -1,
		OtherCPU:  -1,
		DBCPU:     -1,
	}
	if serr == nil && serr1 == nil {
		st.ServerCPU = float64((s1 - s0).Microseconds()) / items
		st.CPUPercent = 100 * (s1 - s0).Seconds() / r.elapsed.Seconds()
	}
	if derr == nil && derr1 == nil {
		st.DBCPU = float64((d1 - d0).Microseconds()) / items
		st.DBCPUPercent = 100 * (d1 - d0).Seconds() / r.elapsed.Seconds()
	}
	own := !slices.Contains(pids, self)
	if cerr == nil && cerr1 == nil && own {
		st.ClientCPU = float64((c1 - c0).Microseconds()) / items
	}
	if serr == nil && serr1 == nil && derr == nil && derr1 == nil && cerr == nil && cerr1 == nil && merr == nil && merr1 == nil {
		other := (m1 - m0) - (s1 - s0) - (d1 - d0)
		if own {
			other -= c1 - c0
		}
		st.OtherCPU = max(0, 100*other.Seconds()/r.elapsed.Seconds())
	}
	return st, nil
}

// cpuWatch is measure's other-CPU figure for a load that measure does not run:
// start it before the load and read it after.
type cpuWatch struct {
	pid        int
	t0         time.Time
	s0, c0, m0 time.Duration
	err        error
}

func watchCPU(pid int) cpuWatch {
	w := cpuWatch{pid: pid, t0: time.Now()}
	var errs [3]error
	w.s0, errs[0] = cpuTime(pid)
	w.c0, errs[1] = cpuTime(os.Getpid())
	w.m0, errs[2] = machineBusy()
	w.err = errors.Join(errs[:]...)
	return w
}

// otherPercent is what everything but the server and this tool used since
// watchCPU, in % of one core; -1 when unavailable.
func (w cpuWatch) otherPercent() float64 {
	s1, serr := cpuTime(w.pid)
	c1, cerr := cpuTime(os.Getpid())
	m1, merr := machineBusy()
	if w.err != nil || serr != nil || cerr != nil || merr != nil {
		return -1
	}
	other := (m1 - w.m0) - (s1 - w.s0) - (c1 - w.c0)
	return max(0, 100*other.Seconds()/time.Since(w.t0).Seconds())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
