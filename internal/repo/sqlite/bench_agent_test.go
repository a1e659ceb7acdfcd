package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// BenchmarkAgentExportImport is one export and one import (as_new) of an
// agent with 10,000 archival passages of 768-d embeddings and 10 sessions of
// 100 messages: the size of a real agent's memory moved between servers.
//
//	go test ./internal/repo/sqlite/ -run '^$' -bench AgentExportImport -benchtime 3x
func BenchmarkAgentExportImport(b *testing.B) {
	s := mustOpen(b)
	ctx := context.Background()
	const tenant, passages, dims = "t", 10_000, 768
	a, err := s.CreateAgent(ctx, tenant, model.CreateAgent{ID: "bench", Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vec := make([]float32, dims)
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET embedding_model = 'bench-768', embedding_dims = ? WHERE tenant_id = ? AND id = ?`,
			dims, tenant, a.ID); err != nil {
			return err
		}
		for i := range passages {
			for j := range vec {
				vec[j] = rng.Float32()*2 - 1
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO passages (tenant_id, agent_id, id, content, tags, metadata, created_at, expires_at, embedding)
				VALUES (?, ?, ?, ?, '[]', '{}', ?, NULL, ?)`, tenant, a.ID, newID(model.PrefixPassage),
				fmt.Sprintf("passage %d: the user mentioned something worth remembering about their order", i),
				int64(model.Now())+int64(i), repo.EncodeVector(vec)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for range 10 {
		ses, err := s.CreateSession(ctx, tenant, model.CreateSession{AgentID: &a.ID})
		if err != nil {
			b.Fatal(err)
		}
		msgs := make([]model.NewMessage, 100)
		for i := range msgs {
			msgs[i] = benchMessage(i)
		}
		if _, err := s.AppendMessages(ctx, tenant, ses.ID, model.AppendRequest{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}

	var buf bytes.Buffer
	var exportTime, importTime, exportCPU, importCPU time.Duration
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		start, startCPU := time.Now(), cpuTime()
		if err := s.ExportAgent(ctx, tenant, a.ID, &buf); err != nil {
			b.Fatal(err)
		}
		mid, midCPU := time.Now(), cpuTime()
		if _, err := s.ImportAgent(ctx, tenant, bytes.NewReader(buf.Bytes()), model.ImportOptions{AsNew: true}); err != nil {
			b.Fatal(err)
		}
		exportTime, exportCPU = exportTime+mid.Sub(start), exportCPU+midCPU-startCPU
		importTime, importCPU = importTime+time.Since(mid), importCPU+cpuTime()-midCPU
	}
	n := float64(b.N)
	b.ReportMetric(float64(buf.Len())/(1<<20), "MiB/export")
	b.ReportMetric(exportTime.Seconds()/n, "s-export/op")
	b.ReportMetric(importTime.Seconds()/n, "s-import/op")
	// CPU, the process's user and system time: on a shared machine the wall
	// time says more about the neighbours.
	b.ReportMetric(exportCPU.Seconds()/n, "cpu-s-export/op")
	b.ReportMetric(importCPU.Seconds()/n, "cpu-s-import/op")
}
