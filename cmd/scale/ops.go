package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// probe appends one small message at a time to a session of its own, back to
// back with a short rest, recording each append's latency: how much an
// operation running beside it slows a tenant's appends.
type probe struct {
	mu      sync.Mutex
	samples []float64
	errs    int
	stop    chan struct{}
	done    chan struct{}
}

const probeSession = "append-probe"

func startProbe(ctx context.Context, c *http.Client, s *server) (*probe, error) {
	body, _ := json.Marshal(map[string]any{"id": probeSession})
	if err := call(ctx, c, "POST", s.url("/v1/sessions"), body, http.StatusCreated, nil); err != nil && !strings.Contains(err.Error(), "409") {
		return nil, err
	}
	p := &probe{stop: make(chan struct{}), done: make(chan struct{})}
	msg := []byte(`{"role":"user","content":"probe message please","tokens":3,"cost":0}`)
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			t0 := time.Now()
			err := call(ctx, c, "POST", s.url("/v1/sessions/"+probeSession+"/messages"), msg, http.StatusCreated, nil)
			ms := float64(time.Since(t0).Microseconds()) / 1000
			p.mu.Lock()
			if err != nil {
				p.errs++
			} else {
				p.samples = append(p.samples, ms)
			}
			p.mu.Unlock()
		}
	}()
	return p, nil
}

// window returns the p99 of the appends recorded since mark, and a new mark.
func (p *probe) window(mark int) (p99 float64, n int, next int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.samples[min(mark, len(p.samples)):]
	return percentile(w, 99), len(w), len(p.samples)
}

func (p *probe) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.samples)
}

func (p *probe) close() {
	close(p.stop)
	<-p.done
}

// job is what the tool reads of a job.
type job struct {
	ID       string          `json:"id"`
	State    string          `json:"state"`
	Result   json.RawMessage `json:"result"`
	Error    json.RawMessage `json:"error"`
	Progress struct {
		Phase string `json:"phase"`
		Done  int64  `json:"done"`
		Total *int64 `json:"total"`
	} `json:"progress"`
}

// runJob starts an operation as a job (Prefer: respond-async) and polls it
// until it ends, and returns its result.
func runJob(ctx context.Context, c *http.Client, s *server, method, path string, body []byte) (json.RawMessage, error) {
	var j job
	if err := call(ctx, c, method, s.url(path), body, http.StatusAccepted, &j, "Prefer", "respond-async"); err != nil {
		return nil, err
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if err := call(ctx, c, "GET", s.url("/v1/admin/jobs/"+j.ID), nil, http.StatusOK, &j); err != nil {
			return nil, err
		}
		switch j.State {
		case "running":
			continue
		case "succeeded":
			return j.Result, nil
		default:
			return nil, fmt.Errorf("job %s %s: %s", j.ID, j.State, j.Error)
		}
	}
}

// operations measures each operator's operation once, with the appends' p99
// for the quiet seconds before it and for its duration.
func operations(ctx context.Context, c *http.Client, s *server, facts fillFacts, dir string, log func(figure)) ([]figure, error) {
	p, err := startProbe(ctx, c, s)
	if err != nil {
		return nil, err
	}
	defer p.close()
	var out []figure
	measure := func(name string, op func(context.Context) (string, error)) error {
		m := p.mark()
		time.Sleep(10 * time.Second) // the appends alone, first
		base, _, m := p.window(m)
		t0 := time.Now()
		note, err := op(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		d := time.Since(t0)
		if d < 3*time.Second { // enough appends for a p99 of the operation's time
			time.Sleep(3*time.Second - d)
		}
		during, n, _ := p.window(m)
		ms := float64(d.Microseconds()) / 1000
		f := figure{Name: name, P50: ms, P99: ms, Reps: 1, AppendsBase: base, AppendsDur: during,
			Note: fmt.Sprintf("%s%d appends during", note, n)}
		log(f)
		out = append(out, f)
		return nil
	}
	backups := filepath.Join(dir, "backups")
	steps := []struct {
		name string
		op   func(context.Context) (string, error)
	}{
		{"integrity check over HTTP (a job)", func(ctx context.Context) (string, error) {
			res, err := runJob(ctx, c, s, "GET", "/v1/admin/integrity", nil)
			var rep struct {
				OK bool `json:"ok"`
			}
			if err == nil {
				err = json.Unmarshal(res, &rep)
			}
			if err == nil && !rep.OK {
				err = fmt.Errorf("integrity check not ok: %s", res)
			}
			return "", err
		}},
		{"export of the big session", func(ctx context.Context) (string, error) {
			req, err := http.NewRequestWithContext(ctx, "GET", s.url("/v1/sessions/"+facts.BigSession+"/export"), nil)
			if err != nil {
				return "", err
			}
			resp, err := c.Do(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			return fmt.Sprintf("%d messages, %.0f MB; ", facts.BigMessages, float64(n)/1e6), err
		}},
	}
	if s.isSQLite() {
		steps = append(steps, struct {
			name string
			op   func(context.Context) (string, error)
		}{"backup over HTTP (a job)", func(ctx context.Context) (string, error) {
			defer os.RemoveAll(backups)
			res, err := runJob(ctx, c, s, "POST", "/v1/admin/backup", []byte(`{"name":"scale.db"}`))
			var b struct {
				Bytes int64 `json:"bytes"`
			}
			if err == nil {
				err = json.Unmarshal(res, &b)
			}
			return fmt.Sprintf("%.1f GB; ", float64(b.Bytes)/1e9), err
		}}, struct {
			name string
			op   func(context.Context) (string, error)
		}{"backup with the CLI (logbook backup)", func(ctx context.Context) (string, error) {
			dest := filepath.Join(dir, "cli-backup.db")
			defer os.Remove(dest)
			_, err := runCLI(ctx, s.bin, s.db, "backup", dest)
			return "", err
		}})
	}
	steps = append(steps, struct {
		name string
		op   func(context.Context) (string, error)
	}{"purge of 10% of sessions (a job)", func(ctx context.Context) (string, error) {
		body, _ := json.Marshal(map[string]any{"status": "completed", "older_than": time.Now().Add(time.Minute).UTC().Format(time.RFC3339)})
		res, err := runJob(ctx, c, s, "POST", "/v1/admin/purge", body)
		var r struct {
			Sessions int64 `json:"sessions"`
			Messages int64 `json:"messages"`
		}
		if err == nil {
			err = json.Unmarshal(res, &r)
		}
		return fmt.Sprintf("%d sessions, %d messages; ", r.Sessions, r.Messages), err
	}})
	for _, st := range steps {
		if err := measure(st.name, st.op); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *server) isSQLite() bool { return !strings.HasPrefix(s.db, "postgres://") }

// waitIndexed polls a search until index_lag is 0, and returns how long that
// took.
func waitIndexed(ctx context.Context, c *http.Client, s *server, log io.Writer) (time.Duration, error) {
	t0 := time.Now()
	last := time.Now()
	for {
		var res searchResult
		if err := call(ctx, c, "GET", s.url("/v1/messages/search?q="+rareWord), nil, http.StatusOK, &res); err != nil {
			return 0, err
		}
		if res.IndexLag == 0 {
			return time.Since(t0), nil
		}
		if time.Since(last) > 30*time.Second {
			fmt.Fprintf(log, "  search index: %d messages to go\n", res.IndexLag)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
