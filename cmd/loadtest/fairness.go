package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Logbook indexes messages for search inside its one writer, in steps, once the
// writer has been idle for a while; a write that arrives meanwhile waits for the
// step under way. The fairness section measures what that costs a tenant with
// small appends (B) while another tenant (A) appends ~1 MB messages, against
// B's appends on their own. B appends a few messages a second, as agents do, so
// the writer goes idle between them and the indexer runs as it would in service.
const (
	fairBClients = 2
	fairBGapMin  = 100 * time.Millisecond // between one B client's sends, at random
	fairBGapMax  = 200 * time.Millisecond
	fairABurst   = 4 // A's messages per burst, sent back to back
	fairAPause   = 300 * time.Millisecond
	// fairAContent is A's words per message: with the JSON around them, the body
	// stays under the server's default 1 MiB limit.
	fairAContent = 900 << 10
	fairATexts   = 8                // distinct contents A cycles through
	fairCatchUp  = 60 * time.Second // to wait for search to index everything
)

// fairnessConfig sets the section's length; tests make it short.
type fairnessConfig struct {
	duration time.Duration // of each of the two phases
	aBursts  int           // A's bursts at most; 0 is as many as fit the duration
}

// fairnessResult is B's append latency alone and beside A, on one server.
type fairnessResult struct {
	PhaseSeconds float64   `json:"phase_seconds"`
	BClients     int       `json:"b_clients"`
	BGapMinMs    int       `json:"b_gap_min_ms"`
	BGapMaxMs    int       `json:"b_gap_max_ms"`
	BAlone       latencies `json:"b_alone"`
	BWithA       latencies `json:"b_with_a"`
	// BApart is those of BWithA that overlapped none of A's appends: the others
	// may have waited for an A append's own commit, which one writer cannot
	// avoid, so the gap between the two is what index steps (and the rest) cost.
	BApart latencies `json:"b_with_a_no_a_append_in_flight"`
	Ratio  float64   `json:"ratio_p99_with_a_alone"`
	// OtherCPU is, per phase, what everything but the server and this tool used,
	// in % of one core, as in the other sections; -1 when unavailable.
	OtherCPUAlone float64   `json:"other_cpu_percent_b_alone"`
	OtherCPUWithA float64   `json:"other_cpu_percent_b_with_a"`
	ABurst        int       `json:"a_burst"`
	APauseMs      int       `json:"a_pause_ms"`
	AContentBytes int       `json:"a_content_bytes"` // per message
	A             latencies `json:"a"`               // A's appends; A.Count is how many A appended
	AMiB          float64   `json:"a_mib_appended"`
	// The catch-up is timed from the end of the load until A's search reports no
	// message of A's unindexed (index_lag 0), or for fairCatchUp at most.
	CaughtUp       bool    `json:"search_caught_up"`
	CatchUpSecs    float64 `json:"catch_up_seconds"`
	IndexLagAtStop int64   `json:"index_lag_at_stop"` // A's messages not yet searchable when the load stopped
	IndexLag       int64   `json:"index_lag_last"`    // as the last search reported it
	// Found is whether a word only A's last message holds, at its end, was found.
	Found bool `json:"last_a_message_found"`
}

// fairnessSetup is the server of the section and its two tenants' targets.
type fairnessSetup struct {
	srv        *server
	base       string
	aKey, aURL string
	bKey       string
	bURLs      []string
	bBody      []byte
}

func fairnessRun(ctx context.Context, e *env, cfg fairnessConfig) (fairnessResult, error) {
	res := fairnessResult{PhaseSeconds: cfg.duration.Seconds(), BClients: fairBClients,
		BGapMinMs: int(fairBGapMin.Milliseconds()), BGapMaxMs: int(fairBGapMax.Milliseconds()),
		ABurst: fairABurst, APauseMs: int(fairAPause.Milliseconds()), AContentBytes: fairAContent}
	s, err := fairnessStart(ctx, e)
	if err != nil {
		return res, err
	}
	defer s.srv.stop()
	// Connections to a stopped server are of no further use.
	defer e.client.CloseIdleConnections()

	// The earlier sections leave hundreds of MB for the kernel to write back. B's
	// fsyncs would queue behind that in the first phase only: a slow baseline
	// would flatter the ratio (a run without this measured p99s near 1 s alone).
	flushDirty()
	cpu := watchCPU(s.srv.pid)
	alone := openLoop(ctx, e.client, s.bURLs, s.bKey, s.bBody, fairBGapMin, fairBGapMax, cfg.duration)
	res.OtherCPUAlone = cpu.otherPercent()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if res.BAlone, err = alone.summary("fairness, B alone"); err != nil {
		return res, err
	}

	// A's texts are made before the phase: making them would compete with B's
	// clients for the CPU.
	a := burst{url: s.aURL, key: s.aKey, burstLen: fairABurst, pause: fairAPause, maxBursts: cfg.aBursts,
		texts: wordsTexts(fairATexts, fairAContent)}
	var big bursts
	cpu = watchCPU(s.srv.pid)
	done := make(chan struct{})
	go func() {
		defer close(done)
		big = a.run(ctx, e.client, cfg.duration)
	}()
	withA := openLoop(ctx, e.client, s.bURLs, s.bKey, s.bBody, fairBGapMin, fairBGapMax, cfg.duration)
	<-done
	stopped := time.Now()
	res.OtherCPUWithA = cpu.otherPercent()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if res.BWithA, err = withA.summary("fairness, B with A"); err != nil {
		return res, err
	}
	if res.A, err = big.timings.summary("fairness, A"); err != nil {
		return res, err
	}
	res.BApart = withA.apart(big.timings).latencies()
	res.AMiB = float64(big.bytes) / (1 << 20)
	res.Ratio = res.BWithA.P99Ms / res.BAlone.P99Ms
	if err := s.srv.exitedEarly(); err != nil {
		return res, err
	}

	res.CaughtUp, res.IndexLagAtStop, res.IndexLag, res.Found, err = waitIndexed(ctx, e.client, s.base, s.aKey, big.marker, fairCatchUp)
	res.CatchUpSecs = time.Since(stopped).Seconds()
	if err != nil {
		return res, fmt.Errorf("fairness, search: %w", err)
	}
	return res, s.srv.exitedEarly()
}

// fairnessStart makes tenants a and b, starts the server and makes their
// sessions: one for A, one per B client.
func fairnessStart(ctx context.Context, e *env) (s fairnessSetup, err error) {
	dir, err := os.MkdirTemp(e.tmp, "fairness-")
	if err != nil {
		return s, err
	}
	keys, err := prepareTenants(ctx, e.serverBin, filepath.Join(dir, logbookDB), "a", "b")
	if err == nil {
		s.srv, err = startLogbookIn(ctx, e.serverBin, dir, "fairness", e.opts.serverFlags...)
	}
	if err != nil {
		os.RemoveAll(dir)
		return s, err
	}
	defer func() {
		if err != nil {
			s.srv.stop()
			e.client.CloseIdleConnections()
		}
	}()
	s.base, s.aKey, s.bKey = "http://"+s.srv.addr, keys[0], keys[1]
	aIDs, err := createSessionsAs(ctx, e, s.base, s.aKey, "fair-a", 1)
	if err != nil {
		return s, err
	}
	s.aURL = s.base + "/v1/sessions/" + aIDs[0] + "/messages"
	bIDs, err := createSessionsAs(ctx, e, s.base, s.bKey, "fair-b", fairBClients)
	if err != nil {
		return s, err
	}
	s.bBody = mustJSON(messageJSON(0))
	for _, id := range bIDs {
		u := s.base + "/v1/sessions/" + id + "/messages"
		// Untimed: opens a connection and takes the session from created to active.
		if err := postAs(ctx, e.client, u, s.bKey, s.bBody, http.StatusCreated); err != nil {
			return s, fmt.Errorf("fairness warm-up: %w", err)
		}
		s.bURLs = append(s.bURLs, u)
	}
	return s, nil
}
