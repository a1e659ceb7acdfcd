package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// pageTarget is a server holding one session of messages to page through.
type pageTarget struct {
	name string
	srv  *server
	url  func(after int) string // the page of the 100 messages after seq after
	db   cpuReader              // the database's processes; nil when it runs inside srv
}

// pageReadsSection measures concurrent page reads on Logbook's paging server,
// and with -pocketbase on PocketBase holding the same session, in rounds that
// alternate between the two so that a drift in the machine hits both alike.
func pageReadsSection(ctx context.Context, e *env, rep *report, w io.Writer, lb *server, msgs string, messages int) error {
	targets := []pageTarget{{name: "logbook", srv: lb, url: func(after int) string {
		return fmt.Sprintf("%s?after_seq=%d&limit=%d", msgs, after, pageSize)
	}}}
	// The floor reads a copy of the very rows Logbook reads.
	fl, err := startFloorOn(ctx, e.self, e.serverBin, lb, "paging-floor")
	if err != nil {
		return err
	}
	defer fl.stop()
	flMsgs := "http://" + fl.addr + strings.TrimPrefix(msgs, "http://"+lb.addr)
	targets = append(targets, pageTarget{name: "floor", srv: fl, url: func(after int) string {
		return fmt.Sprintf("%s?after_seq=%d&limit=%d", flMsgs, after, pageSize)
	}})
	var fill *pbFillResult
	if e.pbBin != "" {
		pb, err := startPocketBase(ctx, e, "paging-pocketbase")
		if err != nil {
			return err
		}
		defer pb.stop()
		session := pagingSession + "-00" // the id createSessions gave Logbook's
		f, err := pbFill(ctx, e, pb, session, messages)
		if err != nil {
			return err
		}
		fill = &f
		base := "http://" + pb.addr
		targets = append(targets, pageTarget{name: "pocketbase", srv: pb, url: func(after int) string {
			return pbPageURL(base, session, after)
		}})
	}
	rep.pageReadsHeader(w, e.opts, messages, fill)
	for i := 1; i <= e.opts.pagingRounds; i++ {
		p := pageReadPair{Round: i}
		for _, t := range targets {
			st, err := pageReadRound(ctx, e, t, messages, i)
			if err != nil {
				return err
			}
			rep.rowOf(w, "page reads ", i, t.name, st)
			switch t.name {
			case "logbook":
				p.Logbook = st
			case "floor":
				p.Floor = &st
			default:
				p.PocketBase = &st
			}
		}
		rep.addPageReadPair(w, p)
	}
	rep.pageReadsFooter(w)
	return nil
}

// pageReadRound has e.opts.pagingClients clients read 100-message pages back to
// back for a round. Each client first reads, untimed, its first page and checks
// it is the full page asked for; the timed reads then only check the status,
// since decoding every page would take the load tool's CPU from the server on a
// small machine.
func pageReadRound(ctx context.Context, e *env, t pageTarget, messages, round int) (stats, error) {
	clients := e.opts.pagingClients
	reads := make([]int, clients) // client i's next read; only client i touches it
	for i := range clients {
		after := pageAfter(i, 0, clients, messages)
		if _, err := getPage(ctx, e, t.url(after), int64(after)+1); err != nil {
			return stats{}, fmt.Errorf("%s page reads warm-up: %w", t.name, err)
		}
		reads[i] = 1
	}
	op := func(ctx context.Context, i int) error {
		after := pageAfter(i, reads[i], clients, messages)
		reads[i]++
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url(after), nil)
		if err != nil {
			return err
		}
		return do(e.client, req, http.StatusOK, io.Discard)
	}
	st, err := measureProcs(ctx, []int{t.srv.pid}, t.db, clients, e.opts.duration, 1, op)
	if err == nil {
		err = t.srv.exitedEarly()
	}
	if err != nil {
		return stats{}, fmt.Errorf("%s page reads r%d: %w", t.name, round, err)
	}
	return st, nil
}

// pageAfter is the after_seq of client's n-th read (from 0) among clients in a
// session of messages: the clients start on neighbouring pages and each strides
// by clients pages, so that together they read every page of the session in
// turn, the deep ones as often as the first, and wrap around.
func pageAfter(client, n, clients, messages int) int {
	pages := messages / pageSize
	return (n*clients + client) % pages * pageSize
}

// pbFillResult is how PocketBase's copy of the paging session was made.
type pbFillResult struct {
	Records    int     `json:"records"`
	PerRequest int     `json:"creates_per_batch_request"`
	FillSecs   float64 `json:"fill_seconds"`
	SettleSecs float64 `json:"settle_seconds"`
}

// pbFill creates messages records of session, seq 1 to messages, through
// PocketBase's batch API (enabled by startPocketBase), batchSize creates per
// request and transaction, as Logbook's session is filled; then it waits for the
// server to go idle.
func pbFill(ctx context.Context, e *env, srv *server, session string, messages int) (pbFillResult, error) {
	res := pbFillResult{Records: messages, PerRequest: batchSize}
	ctx, cancel := context.WithTimeout(ctx, pbFillTimeout)
	defer cancel()
	batch := "http://" + srv.addr + "/api/batch"
	t0 := time.Now()
	for from := 1; from <= messages; from += batchSize {
		body := pbBatchBody(session, from, min(batchSize, messages-from+1))
		if err := post(ctx, e.client, batch, body, http.StatusOK); err != nil {
			return res, fmt.Errorf("pocketbase paging fill: %w", err)
		}
	}
	res.FillSecs = time.Since(t0).Seconds()
	t0 = time.Now()
	if err := waitSettled(ctx, srv.pid, 60*time.Second); err != nil {
		return res, err
	}
	res.SettleSecs = time.Since(t0).Seconds()
	return res, nil
}

// pbFillTimeout bounds the paging fill: PocketBase's batches are not what is
// compared, but a stuck one must not hang the tool.
const pbFillTimeout = 10 * time.Minute
