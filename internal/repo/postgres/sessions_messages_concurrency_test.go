package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// Sixteen writers, over two Store handles (two processes, as far as the
// database can tell), append 200 messages each to one session, some as
// batches, every message under its own idempotency key and every batch under a
// request key, and retry each append once after it succeeded. The session's
// seqs must come out exactly 1..3200, each key's message stored once, each
// retry a replay of what was stored, and the counters the sums.
func TestConcurrentAppendsAcrossHandles(t *testing.T) {
	const (
		writers   = 16
		perWriter = 200
	)
	ctx := context.Background()
	url := mustDatabase(t)
	var handles [2]*postgres.Store
	for i := range handles {
		st, err := postgres.Open(ctx, postgres.Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		handles[i] = st
	}
	if _, err := handles[0].CreateSession(ctx, "t", model.CreateSession{ID: "hot"}); err != nil {
		t.Fatal(err)
	}

	type written struct {
		tokens, users int64
		cost          float64
		requests      int
	}
	results := make([]written, writers)
	errs := make(chan error, writers)
	start := time.Now()
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := handles[g%2]
			w := &results[g]
			lastSeq := int64(0)
			for i := 0; i < perWriter; {
				n := 1
				if i%10 == 0 {
					n = min(4, perWriter-i) // a batch now and then
				}
				req := model.AppendRequest{Batch: n > 1}
				if req.Batch {
					req.RequestKey = fmt.Sprintf("g%d-r%d", g, i)
				}
				for j := range n {
					k := i + j
					m := model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent(fmt.Sprintf("g%d m%d", g, k)),
						Tokens: int64(k%5 + 1), Cost: float64(k%3) * 0.125, IdempotencyKey: fmt.Sprintf("g%d-m%d", g, k)}
					if k%2 == 0 {
						m.Role = model.RoleUser
						w.users++
					}
					w.tokens += m.Tokens
					w.cost += m.Cost
					req.Messages = append(req.Messages, m)
				}
				first, err := st.AppendMessages(ctx, "t", "hot", req)
				if err != nil {
					errs <- fmt.Errorf("writer %d, message %d: %w", g, i, err)
					return
				}
				again, err := st.AppendMessages(ctx, "t", "hot", req)
				if err != nil {
					errs <- fmt.Errorf("writer %d, retry of message %d: %w", g, i, err)
					return
				}
				w.requests += 2
				if first.Replayed || !again.Replayed || len(first.Messages) != n || len(again.Messages) != n {
					errs <- fmt.Errorf("writer %d, message %d: replayed %v then %v, %d and %d messages",
						g, i, first.Replayed, again.Replayed, len(first.Messages), len(again.Messages))
					return
				}
				for j := range n {
					a, b := first.Messages[j], again.Messages[j]
					if a.ID != b.ID || a.Seq != b.Seq || a.Seq <= lastSeq {
						errs <- fmt.Errorf("writer %d, message %d: stored %s at %d, replayed %s at %d, after %d",
							g, i+j, a.ID, a.Seq, b.ID, b.Seq, lastSeq)
						return
					}
					lastSeq = a.Seq
				}
				i += n
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	var want written
	for _, w := range results {
		want.tokens, want.users, want.cost, want.requests = want.tokens+w.tokens, want.users+w.users, want.cost+w.cost, want.requests+w.requests
	}
	const total = writers * perWriter
	t.Logf("%d messages in %d appends (%d of them replays) from %d writers on 2 handles: %v, %.0f messages/s, %.0f appends/s",
		total, want.requests, want.requests/2, writers, elapsed.Round(time.Millisecond),
		float64(total)/elapsed.Seconds(), float64(want.requests)/elapsed.Seconds())

	s, err := handles[1].GetSession(ctx, "t", "hot")
	if err != nil {
		t.Fatal(err)
	}
	if s.MessageCount != total || s.LastSeq != total || s.TotalTokens != want.tokens || s.TotalCost != want.cost ||
		s.TurnCount != want.users || s.Status != model.StatusActive {
		t.Errorf("session = count %d, last_seq %d, tokens %d, cost %g, turns %d, %s; want %d, %d, %d, %g, %d, active",
			s.MessageCount, s.LastSeq, s.TotalTokens, s.TotalCost, s.TurnCount, s.Status, total, total, want.tokens, want.cost, want.users)
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, distinctSeqs, minSeq, maxSeq, keys, distinctKeys, distinctGIDs, cumTokens int64
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT seq), min(seq), max(seq), count(idempotency_key),
			count(DISTINCT idempotency_key), count(DISTINCT gid), max(cum_tokens)
		FROM messages WHERE tenant_id = 't' AND session_id = 'hot'`).Scan(
		&n, &distinctSeqs, &minSeq, &maxSeq, &keys, &distinctKeys, &distinctGIDs, &cumTokens); err != nil {
		t.Fatal(err)
	}
	if n != total || distinctSeqs != total || minSeq != 1 || maxSeq != total || keys != total || distinctKeys != total ||
		distinctGIDs != total || cumTokens != want.tokens {
		t.Errorf("rows %d, seqs %d distinct in [%d, %d], keys %d (%d distinct), gids %d, last cum_tokens %d; want %d rows, seqs 1..%d, one per key, cum_tokens %d",
			n, distinctSeqs, minSeq, maxSeq, keys, distinctKeys, distinctGIDs, cumTokens, total, total, want.tokens)
	}
	// Every key of every writer names exactly one message, with its text.
	var missing int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(0, $1 - 1) g, generate_series(0, $2 - 1) m
		WHERE NOT EXISTS (SELECT 1 FROM messages WHERE tenant_id = 't' AND session_id = 'hot'
			AND idempotency_key = 'g' || g || '-m' || m AND content = 'g' || g || ' m' || m)`, writers, perWriter).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	if missing != 0 {
		t.Errorf("%d keys name no message with their text", missing)
	}
}

// A fault at any point of an append fails it as unavailable and stores
// nothing, except a crash right after the commit, which stores the append and
// loses only its answer; either way the append's stream stops.
func TestAppendFaults(t *testing.T) {
	cases := []struct {
		point  repo.FaultPoint
		kind   repo.FaultKind
		stored bool
	}{
		{repo.PointBegin, repo.FaultError, false},
		{repo.PointExec, repo.FaultError, false},
		{repo.PointMessageWrite, repo.FaultError, false},
		{repo.PointAppendFlush, repo.FaultError, false},
		{repo.PointCommit, repo.FaultError, false},
		{repo.PointCommit, repo.FaultCrashBeforeCommit, false},
		{repo.PointCommit, repo.FaultCrashAfterCommit, true},
	}
	for _, c := range cases {
		t.Run(string(c.point)+"/"+string(c.kind), func(t *testing.T) {
			ctx := context.Background()
			url := mustDatabase(t)
			plain, err := postgres.Open(ctx, postgres.Config{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			if _, err := plain.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
				t.Fatal(err)
			}
			f, err := repo.NewFaults(1, repo.FaultRule{Point: c.point, Kind: c.kind, Rate: 1, Times: 1})
			if err != nil {
				t.Fatal(err)
			}
			st, err := postgres.Open(ctx, postgres.Config{URL: url, Faults: f})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			stream := &repo.AppendStream{}
			wait, err := st.QueueAppend(ctx, "t", "s", sesMsgOne(sesMsgUser("one")), stream)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := wait(); model.AsError(err).Kind != model.KindUnavailable || !errors.Is(err, repo.ErrInjected) {
				t.Fatalf("err = %v, want an injected unavailable", err)
			}
			wait, err = st.QueueAppend(ctx, "t", "s", sesMsgOne(sesMsgUser("two")), stream)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := wait(); model.AsError(err).Code != "stream_stopped" {
				t.Fatalf("the stream's next append: %v, want stream_stopped", err)
			}
			s, err := plain.GetSession(ctx, "t", "s")
			if err != nil {
				t.Fatal(err)
			}
			if stored := s.LastSeq == 1; stored != c.stored || (s.Status == model.StatusActive) != c.stored {
				t.Fatalf("last_seq %d, status %s; want stored = %v", s.LastSeq, s.Status, c.stored)
			}
			if _, err := st.AppendMessages(ctx, "t", "s", sesMsgOne(sesMsgUser("three"))); err != nil {
				t.Fatalf("an append after the fault: %v", err)
			}
		})
	}
}
