package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPBFilter(t *testing.T) {
	for _, c := range []struct {
		name, session string
		after         int
		want          string
	}{
		{"plain_id", "deep-00", 4900, `(session='deep-00' && seq>4900)`},
		{"first_page", "s1", 0, `(session='s1' && seq>0)`},
		{"quote_is_escaped", `a'b`, 1, `(session='a\'b' && seq>1)`},
		{"backslash_is_escaped", `a\`, 1, `(session='a\\' && seq>1)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pbFilter(c.session, c.after); got != c.want {
				t.Errorf("pbFilter(%q, %d) = %s, want %s", c.session, c.after, got, c.want)
			}
		})
	}
}

func TestPBPageURL(t *testing.T) {
	got := pbPageURL("http://127.0.0.1:1234", "deep-00", 4900)
	u, err := url.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/api/collections/messages/records"; u.Path != want {
		t.Errorf("path = %s, want %s", u.Path, want)
	}
	q := u.Query()
	for k, want := range map[string]string{
		"filter": "(session='deep-00' && seq>4900)", "sort": "seq", "perPage": "100", "skipTotal": "1",
	} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	// Spaces, quotes, & and > must not reach the wire as they are: & would
	// split the filter into two parameters.
	if want := "filter=%28session%3D%27deep-00%27+%26%26+seq%3E4900%29"; !strings.Contains(u.RawQuery, want) {
		t.Errorf("raw query %s does not hold %s", u.RawQuery, want)
	}
}

func TestPageAfter(t *testing.T) {
	const clients, messages = 8, 5000 // 50 pages
	pages := messages / pageSize
	seen := map[int]int{}
	starts := map[int]bool{}
	for i := range clients {
		starts[pageAfter(i, 0, clients, messages)] = true
		for n := range pages { // clients × pages reads: every page clients times
			after := pageAfter(i, n, clients, messages)
			if after%pageSize != 0 || after < 0 || after > messages-pageSize {
				t.Fatalf("pageAfter(%d, %d) = %d, want a multiple of %d in [0, %d]", i, n, after, pageSize, messages-pageSize)
			}
			seen[after]++
		}
	}
	if len(starts) != clients {
		t.Errorf("the %d clients start on %d distinct pages, want %d", clients, len(starts), clients)
	}
	if len(seen) != pages {
		t.Errorf("%d distinct pages read, want all %d", len(seen), pages)
	}
	for after, n := range seen {
		if n != clients {
			t.Errorf("page after_seq=%d read %d times, want %d (as often as every other)", after, n, clients)
		}
	}
}

func TestVersus(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		name          string
		ratios, clean []float64
		target        float64
		wantMedian    float64
		wantClean     *float64
		wantPass      bool
	}{
		{"median_above_target_passes", []float64{4.5, 3.9, 4.2}, []float64{4.5, 3.9, 4.2}, 4, 4.2, f(4.2), true},
		{"median_below_target_misses", []float64{4.5, 3.5, 3.9}, []float64{4.5}, 4, 3.9, f(4.5), false},
		{"median_at_target_passes", []float64{5, 5}, nil, 5, 5, nil, true},
		{"even_count_takes_the_mean_of_the_middle_two", []float64{3, 6, 4, 5}, nil, 4.5, 4.5, nil, true},
		{"no_rounds_misses", nil, nil, 4, 0, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := versus(c.ratios, c.clean, c.target)
			if v.MedianRatio != c.wantMedian || v.Pass != c.wantPass || v.Target != c.target || v.CleanPairs != len(c.clean) {
				t.Errorf("versus = median %v pass %v target %v clean pairs %d, want %v %v %v %d",
					v.MedianRatio, v.Pass, v.Target, v.CleanPairs, c.wantMedian, c.wantPass, c.target, len(c.clean))
			}
			if (v.CleanRatio == nil) != (c.wantClean == nil) || (v.CleanRatio != nil && *v.CleanRatio != *c.wantClean) {
				t.Errorf("clean ratio = %v, want %v", v.CleanRatio, c.wantClean)
			}
		})
	}
}

func TestCPUWithin(t *testing.T) {
	for _, c := range []struct {
		us   float64
		want bool
	}{{120, true}, {350, true}, {350.1, false}, {-1, false}} {
		if got := cpuWithin(c.us, targetPageCPU); got != c.want {
			t.Errorf("cpuWithin(%v, %v) = %v, want %v", c.us, targetPageCPU, got, c.want)
		}
	}
}

func TestCheckPage(t *testing.T) {
	page := func(key string, first, n int) []byte {
		items := make([]map[string]int, n)
		for i := range items {
			items[i] = map[string]int{"seq": first + i}
		}
		return mustJSON(map[string]any{key: items})
	}
	for _, c := range []struct {
		name    string
		body    []byte
		wantErr bool
	}{
		{"logbook_page", page("data", 4901, pageSize), false},
		{"pocketbase_page", page("items", 4901, pageSize), false},
		{"short_page", page("items", 4901, pageSize-1), true},
		{"wrong_start", page("data", 4902, pageSize), true},
		{"not_json", []byte("<html>"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := checkPage(c.body, 4901); (err != nil) != c.wantErr {
				t.Errorf("checkPage = %v, want an error: %v", err, c.wantErr)
			}
		})
	}
}

func TestPBBatchBody(t *testing.T) {
	var got struct {
		Requests []struct {
			Method, URL string
			Body        struct {
				Session string `json:"session"`
				Seq     int    `json:"seq"`
				Content string `json:"content"`
			}
		}
	}
	if err := json.Unmarshal(pbBatchBody("deep-00", 1001, 3), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Requests) != 3 {
		t.Fatalf("%d requests, want 3", len(got.Requests))
	}
	for i, r := range got.Requests {
		if r.Method != "POST" || r.URL != "/api/collections/messages/records" || r.Body.Session != "deep-00" ||
			r.Body.Seq != 1001+i || r.Body.Content != content {
			t.Errorf("request %d = %s %s %+v, want POST to the records of deep-00, seq %d", i, r.Method, r.URL, r.Body, 1001+i)
		}
	}
}

func TestWithSeq(t *testing.T) {
	record := mustJSON(pbRecordJSON("appends-r1-03", 0, 3))
	for _, seq := range []int{1, 10, 1234567} {
		var got, want map[string]any
		if err := json.Unmarshal(withSeq(record, seq), &got); err != nil {
			t.Fatalf("withSeq(%d): %v", seq, err)
		}
		if err := json.Unmarshal(mustJSON(pbRecordJSON("appends-r1-03", seq, 3)), &want); err != nil {
			t.Fatal(err)
		}
		if string(mustJSON(got)) != string(mustJSON(want)) {
			t.Errorf("withSeq(%d) = %v, want %v", seq, got, want)
		}
	}
}

// The report's PocketBase lines: ratios per round, their median against the
// target, in the JSON and the summary; and none of them without -pocketbase.
func TestReportPocketBase(t *testing.T) {
	st := func(perSec, cpu float64) stats { return stats{PerSecond: perSec, ServerCPU: cpu} }
	t.Run("with_pocketbase", func(t *testing.T) {
		r := &report{PocketBase: &pocketbaseInfo{Version: "v0.39.11"}}
		var out bytes.Buffer
		r.appendsHeader(&out, options{clients: 32})
		for i, pb := range []float64{2500, 5000} { // ratios 2 and 1: median 1.5
			lb := st(5000, 40)
			r.addAppendPair(&out, appendPair{Round: i + 1, Logbook: lb, Naive: st(2500, 80), PocketBase: &stats{PerSecond: pb, ServerCPU: 300},
				Floor: &stats{PerSecond: 6000, ServerCPU: 32}})
		}
		r.appendsFooter(&out)
		r.pageReadsHeader(&out, options{pagingClients: 8}, 50000, &pbFillResult{Records: 50000, PerRequest: batchSize})
		r.addPageReadPair(&out, pageReadPair{Round: 1, Logbook: st(6000, 200), PocketBase: &stats{PerSecond: 1000}})
		r.pageReadsFooter(&out)
		r.summary(&out)
		for _, want := range []string{
			"logbook/pocketbase = 2.00", "logbook/pocketbase = 1.00",
			"median of 2 per-round ratios logbook/pocketbase: 1.50   target >= 2.0: MISS",
			"appends   logbook/pocketbase   1.50  (target >= 2.0)  MISS",
			"logbook/floor server CPU per append = 1.25",
			"appends   CPU ÷ floor          1.25  (target <= 1.2)  MISS",
			"paging    CPU µs per page     200.0  (target <= 350)  PASS",
			"paging    logbook/pocketbase   6.00  (target >= 5.0)  PASS",
			"logbook 40.0 µs, naive 80.0 µs, floor 32.0 µs, pocketbase 300.0 µs",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
		var got struct {
			Appends struct {
				Pairs      []appendPair  `json:"pairs"`
				PocketBase *versusReport `json:"pocketbase"`
			} `json:"appends"`
			Paging struct {
				Reads *pageReadsReport `json:"reads"`
			} `json:"paging"`
		}
		if err := json.Unmarshal(mustIndentJSON(r), &got); err != nil {
			t.Fatal(err)
		}
		if a := got.Appends; a.PocketBase == nil || a.PocketBase.MedianRatio != 1.5 || a.PocketBase.Pass || len(a.Pairs) != 2 || a.Pairs[1].PBRatio != 1 ||
			a.Pairs[1].FloorCPU != 1.25 {
			t.Errorf("JSON appends = %+v, want logbook/pocketbase median 1.5, MISS, ratio 1 and CPU ratio to the floor 1.25 in round 2", a)
		}
		if rr := got.Paging.Reads; rr == nil || rr.PocketBase == nil || rr.PocketBase.MedianRatio != 6 || rr.CPUPerPage != 200 || !rr.CPUPass {
			t.Errorf("JSON paging reads = %+v, want ratio 6 and 200 µs per page, PASS", rr)
		}
	})
	t.Run("without_pocketbase", func(t *testing.T) {
		r := &report{}
		var out bytes.Buffer
		r.header(&out, options{})
		r.appendsHeader(&out, options{clients: 32})
		r.addAppendPair(&out, appendPair{Round: 1, Logbook: st(5000, 40), Naive: st(2500, 80)})
		r.appendsFooter(&out)
		r.pageReadsHeader(&out, options{pagingClients: 8}, 50000, nil)
		r.addPageReadPair(&out, pageReadPair{Round: 1, Logbook: st(6000, 400)})
		r.pageReadsFooter(&out)
		r.summary(&out)
		if strings.Contains(strings.ToLower(out.String()), "pocketbase") {
			t.Errorf("output names PocketBase without -pocketbase:\n%s", out.String())
		}
		if want := "paging    CPU µs per page     400.0  (target <= 350)  MISS"; !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
		if b := mustIndentJSON(r); bytes.Contains(b, []byte("pocketbase")) {
			t.Errorf("JSON names PocketBase without -pocketbase:\n%s", b)
		}
	})
}

// The PocketBase path end to end against a real PocketBase, when
// LOADTEST_POCKETBASE names one (bash scripts/pocketbase.sh /tmp/pb/base):
// set-up, single creates, the batch fill and both kinds of page read.
func TestPocketBase(t *testing.T) {
	bin := os.Getenv("LOADTEST_POCKETBASE")
	if bin == "" {
		t.Skip("set LOADTEST_POCKETBASE=/path/to/base (built by scripts/pocketbase.sh) to run PocketBase")
	}
	e := &env{pbBin: bin, tmp: t.TempDir(), client: newClient(),
		opts: options{clients: 2, duration: 500 * time.Millisecond, pagingClients: 2}}
	defer e.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if v := pbVersion(bin); !strings.HasPrefix(v, "v0.") {
		t.Errorf("pbVersion = %q, want the module version it was built from", v)
	}

	st, err := appendRound(ctx, e, "pocketbase", 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests == 0 || st.Errors != 0 {
		t.Errorf("appends: %d creates, %d errors; want some and none", st.Requests, st.Errors)
	}

	srv, err := startPocketBase(ctx, e, "paging-pocketbase")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	const messages = 2*batchSize + 500 // the last batch is a short one
	f, err := pbFill(ctx, e, srv, "deep-00", messages)
	if err != nil {
		t.Fatal(err)
	}
	if f.Records != messages {
		t.Errorf("filled %d records, want %d", f.Records, messages)
	}
	base := "http://" + srv.addr
	if _, err := getPage(ctx, e, pbPageURL(base, "deep-00", messages-pageSize), messages-pageSize+1); err != nil {
		t.Errorf("last page: %v", err)
	}
	// The public list rule must let an anonymous client read: no token here.
	resp, err := e.client.Get(pbPageURL(base, "other-session", 0))
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Items []any `json:"items"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(page.Items) != 0 {
		t.Errorf("another session's page: status %d, %d items, %v; want 200 and none", resp.StatusCode, len(page.Items), err)
	}
	pst, err := pageReadRound(ctx, e, pageTarget{name: "pocketbase", srv: srv, url: func(after int) string {
		return pbPageURL(base, "deep-00", after)
	}}, messages, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pst.Requests == 0 || pst.Errors != 0 {
		t.Errorf("page reads: %d pages, %d errors; want some and none", pst.Requests, pst.Errors)
	}
}
