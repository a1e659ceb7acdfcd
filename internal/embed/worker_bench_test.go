package embed_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/embed"
	"github.com/logbook/logbook/internal/embed/standin"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// BenchmarkWorkerEmbedsPassages: how fast the worker empties a backlog of
// pending passages through the stand-in endpoint (768 dimensions, no model
// time: what is left is Logbook's claim, call and save), on SQLite with
// sync=full.
//
//	go test -run '^$' -bench WorkerEmbedsPassages -benchtime 2000x ./internal/embed/
func BenchmarkWorkerEmbedsPassages(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "l.db"), Migrate: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ep := httptest.NewServer(&standin.Server{Dims: 768})
	defer ep.Close()
	cfg := &model.EmbeddingConfig{URL: ep.URL, Model: standin.Model, Dimensions: 768}
	if _, err := st.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a", Embedding: cfg}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := st.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: "passage number " + strconv.Itoa(i) + " about cars and dogs"}); err != nil {
			b.Fatal(err)
		}
	}
	w := &embed.Worker{Store: st, Client: &embed.Client{Allowed: []string{ep.URL}}, Log: zerolog.Nop()}
	b.ResetTimer()
	start := time.Now()
	for {
		more, err := w.Step(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if !more {
			break
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "passages/s")
	b.StopTimer()
	page, err := st.SearchPassages(ctx, "t", "a", model.PassageSearch{Mode: model.SearchVector,
		QueryEmbedding: standin.Embed("cars", 768), Limit: -1})
	if err != nil || len(page) != b.N {
		b.Fatalf("%d of %d passages embedded: %v", len(page), b.N, err)
	}
}
