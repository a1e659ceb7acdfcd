package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	if kind == "logbook" {
		srv, err = startLogbook(ctx, e.serverBin, e.tmp, name, e.opts.serverFlags...)
	} else {
		srv, err = startNaive(ctx, e.self, e.tmp, name, e.opts.naiveMaxConns)
	}
	if err != nil {
		return stats{}, err
	}
	defer srv.stop()
	// Connections to a stopped server are of no further use.
	defer e.client.CloseIdleConnections()

	urls, bodies, err := appendTargets(ctx, e, srv, name, e.opts.clients, func(i int) []byte { return mustJSON(messageJSON(i)) })
	if err != nil {
		return stats{}, err
	}
	op := func(ctx context.Context, i int) error {
		return post(ctx, e.client, urls[i], bodies[i], http.StatusCreated)
	}
	// One untimed append per client opens its connection and takes each session
	// from created to active, so the round measures the steady state.
	for i := range urls {
		if err := op(ctx, i); err != nil {
			return stats{}, fmt.Errorf("%s warm-up: %w", name, err)
		}
	}
	st, err := measure(ctx, srv.pid, e.opts.clients, e.opts.duration, 1, op)
	if err == nil {
		err = srv.exitedEarly()
	}
	if err != nil {
		return stats{}, fmt.Errorf("%s: %w", name, err)
	}
	return st, nil
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
