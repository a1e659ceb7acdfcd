package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

const batchSize = 1000 // the API's largest batch

func batchBody(client int) []byte {
	msgs := make([]map[string]any, batchSize)
	for i := range msgs {
		msgs[i] = messageJSON(client)
	}
	return mustJSON(map[string]any{"messages": msgs})
}

// batchAPIRound measures messages/s through Logbook's API in 1000-message
// batches from e.opts.batchClients concurrent clients, one session each.
func batchAPIRound(ctx context.Context, e *env, round int) (stats, error) {
	name := fmt.Sprintf("batch-api-r%d", round)
	srv, err := startLogbook(ctx, e.serverBin, e.tmp, name, e.opts.serverFlags...)
	if err != nil {
		return stats{}, err
	}
	defer srv.stop()
	// Connections to a stopped server are of no further use.
	defer e.client.CloseIdleConnections()

	urls, bodies, err := appendTargets(ctx, e, srv, name, e.opts.batchClients, batchBody)
	if err != nil {
		return stats{}, err
	}
	op := func(ctx context.Context, i int) error {
		return post(ctx, e.client, urls[i], bodies[i], http.StatusCreated)
	}
	for i := range urls {
		if err := op(ctx, i); err != nil {
			return stats{}, fmt.Errorf("%s warm-up: %w", name, err)
		}
	}
	st, err := measure(ctx, srv.pid, len(urls), e.opts.duration, batchSize, op)
	if err == nil {
		err = srv.exitedEarly()
	}
	if err != nil {
		return stats{}, fmt.Errorf("%s: %w", name, err)
	}
	return st, nil
}

// batchDirectRound is the ceiling for batch writes: the same rows written by this
// process straight into a fresh database with Logbook's schema and durability
// settings, 1000 per transaction through one prepared INSERT, no HTTP, no JSON.
// One writer, because SQLite has one write lock: more would only queue on it.
// Rows go round-robin to as many sessions as the API round has clients, so the
// b-tree sees the same interleaving.
func batchDirectRound(ctx context.Context, e *env, round int) (stats, error) {
	dir, err := os.MkdirTemp(e.tmp, fmt.Sprintf("batch-direct-r%d-", round))
	if err != nil {
		return stats{}, err
	}
	defer os.RemoveAll(dir)
	db, err := openSQLite(ctx, filepath.Join(dir, "direct.db"), true)
	if err != nil {
		return stats{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	sessions := make([]string, e.opts.batchClients)
	now := time.Now().UnixMilli()
	for i := range sessions {
		sessions[i] = fmt.Sprintf("direct-%02d", i)
		if _, err := db.ExecContext(ctx, `INSERT INTO sessions (tenant_id, id, status, metadata, created_at, updated_at)
			VALUES ('default', ?, 'active', '{}', ?, ?)`, sessions[i], now, now); err != nil {
			return stats{}, err
		}
	}
	insert, err := db.PrepareContext(ctx, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content,
		tokens, cost, metadata, created_at, gid, cum_tokens, cum_cost)
		VALUES ('default', ?, ?, ?, 'user', ?, ?, ?, '{}', ?, ?, ?, ?)`)
	if err != nil {
		return stats{}, err
	}
	defer insert.Close()

	// Like Logbook's writer, keep the counters in memory: seq and running totals
	// per session, gid for the whole database.
	seqs := make([]int64, len(sessions))
	cumTokens := make([]int64, len(sessions))
	cumCost := make([]float64, len(sessions))
	var gid int64
	txn := 0
	op := func(ctx context.Context, _ int) error {
		i := txn % len(sessions)
		txn++
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op once committed
		st := tx.StmtContext(ctx, insert)
		now := time.Now().UnixMilli()
		tokens, cost := int64(42+i), 0.00042
		for range batchSize {
			seqs[i]++
			gid++
			cumTokens[i] += tokens
			cumCost[i] += cost
			if _, err := st.ExecContext(ctx, sessions[i], seqs[i], naiveID("msg_"), content, tokens, cost, now,
				gid, cumTokens[i], cumCost[i]); err != nil {
				return err
			}
		}
		return tx.Commit()
	}
	if err := op(ctx, 0); err != nil {
		return stats{}, err
	}
	st, err := measure(ctx, os.Getpid(), 1, e.opts.duration, batchSize, op)
	if err != nil {
		return stats{}, fmt.Errorf("batch-direct-r%d: %w", round, err)
	}
	return st, nil
}
