package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// content is ~200 bytes, the size of a short chat turn.
var content = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 4) + "Logbook load test."

func messageJSON(client int) map[string]any {
	return map[string]any{"role": "user", "content": content, "tokens": 42 + client, "cost": 0.00042}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// createSessions makes one session per client. Separate sessions are how agents
// use the API (one conversation each), and they keep the naive server's
// per-request transactions from all reading and updating one hot session row.
func createSessions(ctx context.Context, e *env, base, prefix string, n int) ([]string, error) {
	return createSessionsAs(ctx, e, base, "", prefix, n)
}

// createSessionsAs is createSessions for the tenant of API key key.
func createSessionsAs(ctx context.Context, e *env, base, key, prefix string, n int) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%02d", prefix, i)
		if err := postAs(ctx, e.client, base+"/v1/sessions", key, mustJSON(map[string]string{"id": ids[i]}), http.StatusCreated); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// appendRound measures single-message appends, one per request, from e.clients
// concurrent clients against a freshly started server of the given kind.
func appendRound(ctx context.Context, e *env, kind string, round int) (stats, error) {
	name := fmt.Sprintf("%s-r%d", kind, round)
	var (
		srv *server
		err error
	)
	switch kind {
	case "logbook":
		srv, err = startLogbook(ctx, e.serverBin, e.tmp, name, e.opts.serverFlags...)
	case "naive":
		srv, err = startNaive(ctx, e.self, e.tmp, name, e.opts.naiveMaxConns)
	case "floor":
		srv, err = startFloor(ctx, e.self, e.tmp, name)
	case "pocketbase":
		srv, err = startPocketBase(ctx, e, name)
	default:
		err = fmt.Errorf("no server kind %q", kind)
	}
	if err != nil {
		return stats{}, err
	}
	defer srv.stop()
	// Connections to a stopped server are of no further use.
	defer e.client.CloseIdleConnections()

	var op func(ctx context.Context, i int) error
	if kind == "pocketbase" {
		op = pbAppendOp(e, srv, name)
	} else if op, err = appendOp(ctx, e, []*server{srv}, name); err != nil {
		return stats{}, err
	}
	return timeAppends(ctx, e, name, []*server{srv}, nil, op)
}

// appendOp makes one session per client, the clients spread over srvs in turn
// (servers on one database), and appends one message per call to client i's.
func appendOp(ctx context.Context, e *env, srvs []*server, name string) (func(ctx context.Context, i int) error, error) {
	ids, err := createSessions(ctx, e, "http://"+srvs[0].addr, name, e.opts.clients)
	if err != nil {
		return nil, err
	}
	urls := make([]string, len(ids))
	bodies := make([][]byte, len(ids))
	for i, id := range ids {
		urls[i] = "http://" + srvs[i%len(srvs)].addr + "/v1/sessions/" + id + "/messages"
		bodies[i] = mustJSON(messageJSON(i))
	}
	return func(ctx context.Context, i int) error {
		return post(ctx, e.client, urls[i], bodies[i], http.StatusCreated)
	}, nil
}

// timeAppends times op from e.opts.clients clients on srvs, whose CPU it sums,
// and db's (nil: the database is inside the servers).
func timeAppends(ctx context.Context, e *env, name string, srvs []*server, db cpuReader, op func(ctx context.Context, i int) error) (stats, error) {
	// One untimed append per client opens its connection and takes each session
	// from created to active, so the round measures the steady state.
	for i := range e.opts.clients {
		if err := op(ctx, i); err != nil {
			return stats{}, fmt.Errorf("%s warm-up: %w", name, err)
		}
	}
	pids := make([]int, len(srvs))
	for i, s := range srvs {
		pids[i] = s.pid
	}
	st, err := measureProcs(ctx, pids, db, e.opts.clients, e.opts.duration, 1, op)
	for _, s := range srvs {
		if err == nil {
			err = s.exitedEarly()
		}
	}
	if err != nil {
		return stats{}, fmt.Errorf("%s: %w", name, err)
	}
	return st, nil
}

// pbAppendOp creates one record per call in client i's own session, numbering
// the session's records as Logbook would. PocketBase has no sessions to create
// first: a session is a value of the record's session field. Client i is only
// ever called from one goroutine, so its counter needs no lock.
func pbAppendOp(e *env, srv *server, name string) func(ctx context.Context, i int) error {
	records := pbRecordsURL("http://" + srv.addr)
	seqs := make([]int, e.opts.clients)
	bodies := make([][]byte, e.opts.clients)
	for i := range bodies {
		bodies[i] = mustJSON(pbRecordJSON(fmt.Sprintf("%s-%02d", name, i), 0, i))
	}
	return func(ctx context.Context, i int) error {
		seqs[i]++
		return post(ctx, e.client, records, withSeq(bodies[i], seqs[i]), http.StatusOK)
	}
}

// withSeq is record, a JSON object whose seq is 0, with seq set instead: only
// the number changes from one create to the next, and splicing it in keeps the
// load tool's CPU per request (it shares the machine) close to what it spends
// on Logbook's prepared bodies.
func withSeq(record []byte, seq int) []byte {
	i := bytes.Index(record, []byte(`"seq":0`))
	out := make([]byte, 0, len(record)+20)
	out = append(out, record[:i+len(`"seq":`)]...)
	out = strconv.AppendInt(out, int64(seq), 10)
	return append(out, record[i+len(`"seq":0`):]...)
}

// appendTargets makes one session per client on srv and returns, for each client,
// its session's messages URL and the body it will send there.
func appendTargets(ctx context.Context, e *env, srv *server, name string, clients int, body func(i int) []byte) (urls []string, bodies [][]byte, err error) {
	base := "http://" + srv.addr
	ids, err := createSessions(ctx, e, base, name, clients)
	if err != nil {
		return nil, nil, err
	}
	urls = make([]string, len(ids))
	bodies = make([][]byte, len(ids))
	for i, id := range ids {
		urls[i] = base + "/v1/sessions/" + id + "/messages"
		bodies[i] = body(i)
	}
	return urls, bodies, nil
}
