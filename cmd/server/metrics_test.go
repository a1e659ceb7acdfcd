package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// freeAddr is a loopback address no one listens on, for a second listener of
// run's (runInProcess learns only the API's address from the log).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// Metrics are served on --metrics-addr (or LOGBOOK_METRICS_ADDR) alone, never on
// the API's listener; --pprof adds the profiler to the API's listener.
func TestMetricsAndPprofFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     []string
		metrics bool // GET /metrics answers on the metrics address
		pprof   bool
	}{
		{"neither_by_default", nil, nil, false, false},
		{"metrics_by_flag", []string{"--metrics-addr", "{addr}"}, nil, true, false},
		{"metrics_by_env", nil, []string{"LOGBOOK_METRICS_ADDR", "{addr}"}, true, false},
		{"pprof_by_flag", []string{"--pprof"}, nil, false, true},
		{"pprof_by_env", nil, []string{"LOGBOOK_PPROF", "true"}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			maddr := freeAddr(t)
			args := []string{"--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "l.db")}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "{addr}", maddr))
			}
			env := []string{"LOGBOOK_LOG_LEVEL", "warn"}
			for _, e := range tc.env {
				env = append(env, strings.ReplaceAll(e, "{addr}", maddr))
			}
			base, stop := runInProcess(t, args, envOf(env...))
			res, err := http.Post(base+"/v1/sessions", "application/json", strings.NewReader(`{}`))
			if err != nil || res.StatusCode != http.StatusCreated {
				t.Fatalf("create: %v %v", res, err)
			}
			res.Body.Close()

			if code, _ := httpGet(t, base+"/metrics"); code != http.StatusNotFound {
				t.Errorf("GET /metrics on the API's listener = %d, want 404", code)
			}
			if tc.metrics {
				code, body := httpGet(t, "http://"+maddr+"/metrics")
				if code != http.StatusOK {
					t.Fatalf("GET /metrics = %d", code)
				}
				for _, want := range []string{
					"logbook_sqlite_writer_commits_total ",
					`logbook_http_requests_total{code="201",method="POST",route="/v1/sessions"} 1`,
					"logbook_feed_subscribers 0",
					"logbook_sqlite_wal_max_bytes 6.7108864e+07", // --wal-max-bytes' default reaches the store
					"go_goroutines ",
				} {
					if !strings.Contains(body, want) {
						t.Errorf("the exposition lacks %q", want)
					}
				}
				if strings.Contains(body, "logbook_sqlite_writer_commits_total 0\n") {
					t.Error("no commit counted after a created session")
				}
			} else if _, err := http.Get("http://" + maddr + "/metrics"); err == nil {
				t.Errorf("something answers on %s without --metrics-addr", maddr)
			}
			wantPprof := http.StatusNotFound
			if tc.pprof {
				wantPprof = http.StatusOK
			}
			if code, _ := httpGet(t, base+"/debug/pprof/"); code != wantPprof {
				t.Errorf("GET /debug/pprof/ = %d, want %d", code, wantPprof)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A taken metrics port fails the start, naming the flag, before serving.
func TestMetricsAddrTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = run(context.Background(), []string{"--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "l.db"),
		"--metrics-addr", ln.Addr().String()}, envOf("LOGBOOK_LOG_LEVEL", "warn"), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "metrics-addr") {
		t.Fatalf("run = %v, want an error naming metrics-addr", err)
	}
}
