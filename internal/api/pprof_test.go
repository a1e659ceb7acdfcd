package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// /debug/pprof exists only with the flag, and even then answers loopback
// clients alone: anyone else gets the 404 of a route that does not exist,
// whatever headers claim.
func TestPprof(t *testing.T) {
	st := mustOpen(t, sqlite.Config{})
	servers := map[bool]*api.Server{}
	for _, on := range []bool{false, true} {
		servers[on] = api.New(api.Config{Store: st, Log: zerolog.Nop(), Spec: logbook.OpenAPI, AllowOpen: true, Pprof: on})
	}
	const (
		remote4 = "203.0.113.7:41000"
		remote6 = "[2001:db8::1]:41000"
		lo4     = "127.0.0.1:41000"
		lo6     = "[::1]:41000"
	)
	cases := []struct {
		name    string
		pprof   bool
		remote  string
		path    string
		headers []string
		status  int
		body    string // in the answer when 200
	}{
		{"off_from_loopback_is_404", false, lo4, "/debug/pprof/", nil, 404, ""},
		{"off_heap_from_loopback_is_404", false, lo4, "/debug/pprof/heap", nil, 404, ""},
		{"on_index_from_loopback", true, lo4, "/debug/pprof/", nil, 200, "goroutine"},
		{"on_index_from_ipv6_loopback", true, lo6, "/debug/pprof/", nil, 200, "goroutine"},
		{"on_heap_from_loopback", true, lo4, "/debug/pprof/heap?debug=1", nil, 200, "heap profile"},
		{"on_goroutines_from_loopback", true, lo4, "/debug/pprof/goroutine?debug=1", nil, 200, "goroutine profile"},
		{"on_cmdline_from_loopback", true, lo4, "/debug/pprof/cmdline", nil, 200, ""},
		{"on_without_slash_redirects", true, lo4, "/debug/pprof", nil, 301, ""},
		{"on_unknown_profile_is_pprofs_404", true, lo4, "/debug/pprof/nope", nil, 404, "Unknown profile"},
		{"on_index_from_remote_is_404", true, remote4, "/debug/pprof/", nil, 404, ""},
		{"on_heap_from_remote_is_404", true, remote4, "/debug/pprof/heap", nil, 404, ""},
		{"on_cmdline_from_remote_is_404", true, remote4, "/debug/pprof/cmdline", nil, 404, ""},
		{"on_from_ipv6_remote_is_404", true, remote6, "/debug/pprof/goroutine", nil, 404, ""},
		{"on_without_slash_from_remote_is_404", true, remote4, "/debug/pprof", nil, 404, ""},
		{"on_remote_claiming_loopback_is_404", true, remote4, "/debug/pprof/heap",
			[]string{"X-Forwarded-For", "127.0.0.1", "X-Real-Ip", "127.0.0.1", "Forwarded", "for=127.0.0.1"}, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			req.RemoteAddr = tc.remote
			for i := 0; i+1 < len(tc.headers); i += 2 {
				req.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			rec := httptest.NewRecorder()
			servers[tc.pprof].ServeHTTP(rec, req)
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status {
				t.Fatalf("GET %s from %s = %d, want %d\n%.300s", tc.path, tc.remote, res.StatusCode, tc.status, body)
			}
			switch tc.status {
			case http.StatusOK:
				if !strings.Contains(string(body), tc.body) {
					t.Errorf("body lacks %q:\n%.300s", tc.body, body)
				}
			case http.StatusNotFound:
				if tc.body != "" { // pprof's own answer, to a loopback client
					if !strings.Contains(string(body), tc.body) {
						t.Errorf("body lacks %q:\n%.300s", tc.body, body)
					}
					break
				}
				// The same problem as a route that does not exist: nothing says
				// that the profiler is there.
				var p problem
				if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
					t.Errorf("Content-Type = %q, want application/problem+json", ct)
				} else if err := json.Unmarshal(body, &p); err != nil || p.Code != "not_found" {
					t.Errorf("problem %s (%v), want code not_found", body, err)
				}
			case http.StatusMovedPermanently:
				if loc := res.Header.Get("Location"); loc != "/debug/pprof/" {
					t.Errorf("Location = %q, want /debug/pprof/", loc)
				}
			}
		})
	}

	// Over a real connection the peer is the TCP address: httptest's is loopback.
	t.Run("on_over_tcp_from_loopback", func(t *testing.T) {
		ts := httptest.NewServer(servers[true])
		defer ts.Close()
		res, err := http.Get(ts.URL + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", res.StatusCode)
		}
	})
}
