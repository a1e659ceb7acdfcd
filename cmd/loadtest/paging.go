package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// pagingResult compares reading the first 100-message page of a long session with
// reading one near its end.
type pagingResult struct {
	Messages   int     `json:"messages"`
	Reps       int     `json:"reps"`
	FirstP50Ms float64 `json:"first_p50_ms"`
	FirstP99Ms float64 `json:"first_p99_ms"`
	DeepP50Ms  float64 `json:"deep_p50_ms"`
	DeepP99Ms  float64 `json:"deep_p99_ms"`
	DeepAfter  int     `json:"deep_after_seq"`
	RatioP50   float64 `json:"ratio_deep_first_p50"`
	FillSecs   float64 `json:"fill_seconds"`
	// SettleSecs is how long the server kept working after the fill (Logbook
	// indexes messages for search when writes pause) before reads were timed.
	SettleSecs float64 `json:"settle_seconds"`
}

const pageSize = 100

// startPaging starts Logbook's server for the paging section and fills one
// session through the API; it returns the server, idle again, and that session's
// messages URL.
func startPaging(ctx context.Context, e *env) (*server, string, pagingResult, error) {
	srv, err := startLogbook(ctx, e.serverBin, e.tmp, "paging", e.opts.serverFlags...)
	if err != nil {
		return nil, "", pagingResult{}, err
	}
	msgs, res, err := fillPaging(ctx, e, srv, nil)
	if err != nil {
		srv.stop()
		return nil, "", res, err
	}
	return srv, msgs, res, nil
}

// fillPaging fills the paging session on srv and waits until srv, and db when
// not nil (a database in processes of its own), have gone idle again.
func fillPaging(ctx context.Context, e *env, srv *server, db cpuReader) (string, pagingResult, error) {
	base := "http://" + srv.addr
	fill := e.opts.pagingFill / batchSize * batchSize
	res := pagingResult{Messages: fill, Reps: e.opts.pagingReps, DeepAfter: fill - pageSize}
	ids, err := createSessions(ctx, e, base, pagingSession, 1)
	if err != nil {
		return "", res, err
	}
	msgs := base + "/v1/sessions/" + ids[0] + "/messages"

	t0 := time.Now()
	body := batchBody(0)
	for n := 0; n < fill; n += batchSize {
		if err := post(ctx, e.client, msgs, body, http.StatusCreated); err != nil {
			return "", res, fmt.Errorf("paging fill: %w", err)
		}
	}
	res.FillSecs = time.Since(t0).Seconds()
	t0 = time.Now()
	if err := waitSettled(ctx, srv.pid, 60*time.Second); err != nil {
		return "", res, err
	}
	if db != nil {
		if err := waitIdle(ctx, db, 60*time.Second); err != nil {
			return "", res, err
		}
	}
	res.SettleSecs = time.Since(t0).Seconds()
	return msgs, res, nil
}

// pagingSession is the prefix of the paging session's id; PocketBase's records
// carry the same id in their session field.
const pagingSession = "deep"

// pageLatencies times GET …/messages at after_seq=0 and at after_seq=fill-100 on
// the session startPaging filled, alternating which goes first so that neither
// always runs on a cache the other just warmed.
func pageLatencies(ctx context.Context, e *env, srv *server, msgs string, res *pagingResult) error {
	first := fmt.Sprintf("%s?after_seq=0&limit=%d", msgs, pageSize)
	deep := fmt.Sprintf("%s?after_seq=%d&limit=%d", msgs, res.DeepAfter, pageSize)
	var firstLat, deepLat []time.Duration
	for i := -20; i < res.Reps; i++ { // the first 20 only warm up
		order := []struct {
			url  string
			want int64
			lat  *[]time.Duration
		}{{first, 1, &firstLat}, {deep, int64(res.DeepAfter) + 1, &deepLat}}
		if i%2 != 0 {
			slices.Reverse(order)
		}
		for _, o := range order {
			d, err := getPage(ctx, e, o.url, o.want)
			if err != nil {
				return err
			}
			if i >= 0 {
				*o.lat = append(*o.lat, d)
			}
		}
	}
	if err := srv.exitedEarly(); err != nil {
		return err
	}
	slices.Sort(firstLat)
	slices.Sort(deepLat)
	res.FirstP50Ms, res.FirstP99Ms = ms(percentile(firstLat, 50)), ms(percentile(firstLat, 99))
	res.DeepP50Ms, res.DeepP99Ms = ms(percentile(deepLat, 50)), ms(percentile(deepLat, 99))
	res.RatioP50 = res.DeepP50Ms / res.FirstP50Ms
	return nil
}

// getPage times one page read, whole body included, then checks outside the timed
// part that it is the full page that was asked for.
func getPage(ctx context.Context, e *env, url string, firstSeq int64) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	t0 := time.Now()
	if err := do(e.client, req, http.StatusOK, &buf); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if err := checkPage(buf.Bytes(), firstSeq); err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	return d, nil
}

// checkPage checks that a page, Logbook's ("data") or PocketBase's ("items"),
// is full and starts at firstSeq.
func checkPage(body []byte, firstSeq int64) error {
	type seq struct {
		Seq int64 `json:"seq"`
	}
	var page struct {
		Data  []seq `json:"data"`
		Items []seq `json:"items"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return err
	}
	got := append(page.Data, page.Items...)
	if len(got) != pageSize {
		return fmt.Errorf("%d messages, want %d", len(got), pageSize)
	}
	if got[0].Seq != firstSeq {
		return fmt.Errorf("page starts at seq %d, want %d", got[0].Seq, firstSeq)
	}
	return nil
}

// waitSettled waits until the process pid has used under 5% of a core for two
// 250 ms intervals running, so that the reads are timed against an idle server,
// not against background work the fill left behind.
func waitSettled(ctx context.Context, pid int, limit time.Duration) error {
	return waitIdle(ctx, func() (time.Duration, error) { return cpuTime(pid) }, limit)
}

// waitIdle is waitSettled for the CPU cpu reads.
func waitIdle(ctx context.Context, cpu cpuReader, limit time.Duration) error {
	const interval = 250 * time.Millisecond
	deadline := time.Now().Add(limit)
	quiet := 0
	prev, err := cpu()
	if err != nil {
		return nil // without /proc there is nothing to wait on
	}
	for quiet < 2 {
		if time.Now().After(deadline) {
			return fmt.Errorf("server still busy %s after the paging fill", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
		cur, err := cpu()
		if err != nil {
			return err
		}
		if cur-prev < interval/20 {
			quiet++
		} else {
			quiet = 0
		}
		prev = cur
	}
	return nil
}
