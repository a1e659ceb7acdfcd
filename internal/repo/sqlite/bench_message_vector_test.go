package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// BenchmarkMessageSearchByMeaning is conversation search by meaning over
// one agent's sessions: 10 sessions × 1,000 messages of ~400 characters, each
// with an embedding of 768 numbers, top 10. Run:
//
//	go test -run '^$' -bench MessageSearchByMeaning -benchtime 20x ./internal/repo/sqlite/
func BenchmarkMessageSearchByMeaning(b *testing.B) {
	const sessions, each, dims = 10, 1000, 768
	s := mustOpen(b)
	ctx := context.Background()
	agent := "bench"
	if _, err := s.CreateAgent(ctx, "t", model.CreateAgent{ID: agent, Name: agent}); err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("a line of an agent's conversation. ", 11)
	for i := range sessions {
		id := fmt.Sprint("s", i)
		if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: id, AgentID: &agent}); err != nil {
			b.Fatal(err)
		}
		for done := 0; done < each; done += 100 {
			msgs := make([]model.NewMessage, 100)
			for j := range msgs {
				msgs[j] = model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprint(done+j, " ", text))}
			}
			if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: msgs, Batch: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	if err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET embedding_model = 'bench', embedding_dims = ? WHERE tenant_id = 't' AND id = ?`, dims, agent); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT session_id, seq, id FROM messages WHERE tenant_id = 't'`)
		if err != nil {
			return err
		}
		type key struct {
			session, id string
			seq         int64
		}
		var keys []key
		for rows.Next() {
			var k key
			if err := rows.Scan(&k.session, &k.seq, &k.id); err != nil {
				return err
			}
			keys = append(keys, k)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO message_embeddings (tenant_id, session_id, seq, message_id, agent_id, state, model, embedding)
				VALUES ('t', ?, ?, ?, ?, 'ready', 'bench', ?)`, k.session, k.seq, k.id, agent, repo.EncodeVector(vec())); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	queries := make([][]float32, 20)
	for i := range queries {
		queries[i] = vec()
	}
	for _, tc := range []struct {
		name string
		in   model.MessageSearch
	}{
		{"agent", model.MessageSearch{AgentID: agent}},
		{"session", model.MessageSearch{SessionID: "s3"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				in := tc.in
				in.Mode, in.Limit, in.QueryEmbedding = model.SearchVector, 10, queries[i%len(queries)]
				res, err := s.SearchMessages(ctx, "t", in)
				if err != nil || len(res.Data) != 10 {
					b.Fatalf("%d hits, %v", len(res.Data), err)
				}
				i++
			}
		})
	}
}

// BenchmarkAppendBatchOwnEmbedding is BenchmarkAppendBatch1000 with each
// message carrying its own 768-d embedding: what storing it in the append's
// write costs (one more INSERT a message, one read of the agent an append).
// Run beside BenchmarkAppendBatch1000, which pays none of it.
func BenchmarkAppendBatchOwnEmbedding(b *testing.B) {
	s := mustOpen(b)
	ctx := context.Background()
	if _, err := s.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		b.Fatal(err)
	}
	ses, err := s.CreateSession(ctx, "t", model.CreateSession{AgentID: new("a")})
	if err != nil {
		b.Fatal(err)
	}
	vec := make([]float32, 768)
	for i := range vec {
		vec[i] = float32(i%7) / 7
	}
	msgs := make([]model.NewMessage, 1000)
	for i := range msgs {
		msgs[i] = benchMessage(i)
		msgs[i].Embedding, msgs[i].EmbeddingModel = vec, "bench"
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.AppendMessages(ctx, "t", ses.ID, model.AppendRequest{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "msgs/s")
}
