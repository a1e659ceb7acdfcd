package api_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	logbook "github.com/logbook/logbook"
	"github.com/logbook/logbook/internal/api"
	"github.com/logbook/logbook/internal/metrics"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// newMetricsClient is newClient with metrics wired as cmd/server wires them,
// and a function that scrapes the registry's handler and parses what it says.
func newMetricsClient(t *testing.T) (*client, func() exposition) {
	t.Helper()
	loadSpec(t)
	var st repo.Store
	if onPostgres {
		st = openPostgres(t, "", nil)
	} else {
		st = mustOpen(t, sqlite.Config{})
	}
	reg := metrics.New("v0.0.0-test", zerolog.Nop())
	reg.WatchStore(st)
	srv := api.New(api.Config{Log: zerolog.Nop(), Spec: logbook.OpenAPI, AllowOpen: true, Store: st, Requests: reg})
	reg.WatchFeed(srv)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	ms := httptest.NewServer(reg.Handler())
	t.Cleanup(ms.Close)
	scrape := func() exposition {
		t.Helper()
		res, err := http.Get(ms.URL)
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("scrape: status %d", res.StatusCode)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(res.Body)
		if err != nil {
			t.Fatalf("scrape: parse the exposition: %v", err)
		}
		return exposition(fams)
	}
	return &client{t: t, base: ts.URL, http: ts.Client(), store: st}, scrape
}

// exposition is one scrape, by family name.
type exposition map[string]*dto.MetricFamily

// value is the sample of family name whose labels include want (name=value
// pairs): a counter's or gauge's value, a histogram's count. ok is false when
// there is no such sample.
func (e exposition) value(name string, want ...string) (v float64, ok bool) {
	fam := e[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// TestMetricsExposition drives the API (appends, reads, a miss, a live feed)
// and checks that a scrape says so: requests by route pattern, the SQLite
// writer's commits and groups, its files, the search index's lag, the feed's
// subscribers, or, on PostgreSQL, the pool's figures.
func TestMetricsExposition(t *testing.T) {
	c, scrape := newMetricsClient(t)
	const appends = 5
	ses := mustCreateSession(t, c, nil)
	for i := range appends {
		mustAppend(t, c, ses.ID, userMsg("message "+string(rune('a'+i))))
	}
	mustGetSession(t, c, ses.ID)
	c.do("GET", "/v1/sessions/no_such_session", nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("GET", "/no/such/route", nil).wantProblem(t, http.StatusNotFound, "not_found")

	// From the log's start, the stream reads the store; what is written while
	// it is open comes through the hub's tail, which reads the log for all,
	// once it has found the log's head: append until the tail has read one.
	f := openFeed(t, c, "/v1/events?after="+url.QueryEscape(feedStart(t, c, "default")))
	if _, ok := f.next(5 * time.Second); !ok {
		t.Fatal("the live feed sent no event")
	}
	var during exposition
	total := appends // messages appended
	for {
		total++
		mustAppend(t, c, ses.ID, userMsg("while the feed is open"))
		for {
			e, ok := f.next(5 * time.Second)
			if !ok {
				t.Fatal("the live feed ended before the last append's event")
			}
			if strings.Contains(e.Data, `"seq":`+strconv.Itoa(total)) {
				break
			}
		}
		during = scrape()
		if n, _ := during.value("logbook_feed_events_read_total"); n > 0 || total == appends+20 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.close()

	// The feed's request is counted when it ends, after its subscriber left:
	// wait for both.
	var after exposition
	for deadline := time.Now().Add(5 * time.Second); ; {
		after = scrape()
		subs, _ := after.value("logbook_feed_subscribers")
		done, _ := after.value("logbook_http_requests_total", "route", "/v1/events")
		if subs == 0 && done == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	type check struct {
		name   string
		family string
		labels []string
		ok     func(v float64) bool
		want   string
		from   exposition
	}
	atLeast := func(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
	exactly := func(n float64) func(float64) bool { return func(v float64) bool { return v == n } }
	checks := []check{
		{"appends_counted_by_route_pattern", "logbook_http_requests_total",
			[]string{"method", "POST", "route", "/v1/sessions/{id}/messages", "code", "201"}, exactly(float64(total)), strconv.Itoa(total), after},
		{"session_read_counted", "logbook_http_requests_total",
			[]string{"method", "GET", "route", "/v1/sessions/{id}", "code", "200"}, exactly(1), "1", after},
		{"miss_of_a_route_counted_under_its_pattern", "logbook_http_requests_total",
			[]string{"method", "GET", "route", "/v1/sessions/{id}", "code", "404"}, exactly(1), "1", after},
		{"unmatched_path_counted_without_the_path", "logbook_http_requests_total",
			[]string{"method", "GET", "route", "unmatched", "code", "404"}, exactly(1), "1", after},
		{"append_latency_observed", "logbook_http_request_duration_seconds",
			[]string{"method", "POST", "route", "/v1/sessions/{id}/messages"}, exactly(float64(total)), strconv.Itoa(total) + " observations", after},
		{"feed_request_counted_once_it_ended", "logbook_http_requests_total",
			[]string{"method", "GET", "route", "/v1/events", "code", "200"}, exactly(1), "1", after},
		{"feed_subscriber_while_open", "logbook_feed_subscribers", nil, exactly(1), "1", during},
		{"feed_subscriber_gone_after_close", "logbook_feed_subscribers", nil, exactly(0), "0", after},
		{"feed_delivered_an_event", "logbook_feed_events_delivered_total", nil, atLeast(1), ">= 1", during},
		{"feed_read_the_log", "logbook_feed_events_read_total", nil, atLeast(1), ">= 1", during},
		{"build_info", "logbook_build_info", []string{"version", "v0.0.0-test"}, exactly(1), "1", after},
		{"go_runtime", "go_goroutines", nil, atLeast(1), ">= 1", after},
	}
	if onPostgres {
		checks = append(checks,
			check{"pool_open_conns", "logbook_pg_pool_total_conns", nil, atLeast(1), ">= 1", after},
			check{"pool_max_conns", "logbook_pg_pool_max_conns", nil, atLeast(1), ">= 1", after},
			check{"pool_acquires", "logbook_pg_pool_acquires_total", nil, atLeast(appends), ">= 5", after},
			check{"pool_acquired_at_rest", "logbook_pg_pool_acquired_conns", nil, atLeast(0), ">= 0", after},
			check{"pool_acquire_time", "logbook_pg_pool_acquire_duration_seconds_total", nil, atLeast(0), ">= 0", after},
			check{"pool_waits", "logbook_pg_pool_empty_acquires_total", nil, atLeast(0), ">= 0", after},
		)
	} else {
		commits, _ := after.value("logbook_sqlite_writer_commits_total")
		checks = append(checks,
			check{"writer_committed", "logbook_sqlite_writer_commits_total", nil, atLeast(1), ">= 1", after},
			// the session, the appends (the feed's reads write nothing)
			check{"writer_writes", "logbook_sqlite_writer_writes_total", nil, atLeast(float64(1 + total)), ">= 1 + appends", after},
			check{"group_per_commit", "logbook_sqlite_writer_group_size", nil, atLeast(commits), ">= commits", after},
			check{"group_time_per_commit", "logbook_sqlite_writer_group_duration_seconds", nil, atLeast(commits), ">= commits", after},
			check{"fsync_per_commit_under_full", "logbook_sqlite_commit_fsyncs_total", nil, exactly(commits), "= commits", after},
			check{"queue_empty_at_rest", "logbook_sqlite_writer_queue_depth", nil, exactly(0), "0", after},
			check{"queue_capacity", "logbook_sqlite_writer_queue_capacity", nil, atLeast(1), ">= 1", after},
			check{"db_file_size", "logbook_sqlite_file_bytes", []string{"file", "db"}, atLeast(4096), ">= one page", after},
			check{"wal_file_size", "logbook_sqlite_file_bytes", []string{"file", "wal"}, atLeast(0), ">= 0", after},
			check{"search_file_size", "logbook_sqlite_file_bytes", []string{"file", "search"}, atLeast(4096), ">= one page", after},
			check{"index_lag_sane", "logbook_sqlite_search_index_lag", nil,
				func(v float64) bool { return v >= 0 && v <= float64(total) }, "0..appends", after},
		)
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.from.value(tc.family, tc.labels...)
			if !ok {
				t.Fatalf("no %s%v in the exposition", tc.family, tc.labels)
			}
			if !tc.ok(got) {
				t.Errorf("%s%v = %v, want %s", tc.family, tc.labels, got, tc.want)
			}
		})
	}

	t.Run("no_raw_paths_in_labels", func(t *testing.T) {
		for _, m := range after["logbook_http_requests_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), ses.ID) || strings.Contains(l.GetValue(), "no_such") {
					t.Errorf("label %s=%q carries a raw path", l.GetName(), l.GetValue())
				}
			}
		}
	})
	t.Run("group_sizes_add_up_to_the_writes", func(t *testing.T) {
		requireSQLite(t, "the writer's groups")
		writes, _ := after.value("logbook_sqlite_writer_writes_total")
		var sum float64
		for _, m := range after["logbook_sqlite_writer_group_size"].GetMetric() {
			sum += m.GetHistogram().GetSampleSum()
		}
		if sum != writes {
			t.Errorf("sum of group sizes = %v, want %v, the writes committed (no group failed)", sum, writes)
		}
	})
	t.Run("other_backend_absent", func(t *testing.T) {
		other := "logbook_pg_pool_total_conns"
		if onPostgres {
			other = "logbook_sqlite_writer_commits_total"
		}
		if _, ok := after.value(other); ok {
			t.Errorf("%s is exposed, but this store is not that backend", other)
		}
	})
}

// The search index's lag counts what the indexer has not reached, and
// falls to zero once it has.
func TestMetricsIndexLagCatchesUp(t *testing.T) {
	requireSQLite(t, "the search indexer")
	c, scrape := newMetricsClient(t)
	ses := mustCreateSession(t, c, nil)
	for range 3 {
		mustAppend(t, c, ses.ID, userMsg("zebras at noon"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		lag, ok := scrape().value("logbook_sqlite_search_index_lag")
		if !ok {
			t.Fatal("no logbook_sqlite_search_index_lag")
		}
		if lag == 0 {
			break
		}
		if lag < 0 || lag > 3 || time.Now().After(deadline) {
			t.Fatalf("index lag = %v, want it to reach 0 from at most 3", lag)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, _ := scrape().value("logbook_sqlite_search_indexed_total"); n < 3 {
		t.Errorf("logbook_sqlite_search_indexed_total = %v after the lag reached 0, want >= 3", n)
	}
}
