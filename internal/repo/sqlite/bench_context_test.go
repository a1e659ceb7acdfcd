package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// BenchmarkContext is the read before every LLM call: the context of a
// 10,000-message session (a system prompt, then user/assistant turns with tool
// calls, 40 tokens a message), with and without a compaction, for a budget
// that holds ~100 messages and for everything after a compaction.
func BenchmarkContext(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Config{Path: filepath.Join(b.TempDir(), "l.db"), Migrate: true, NoMessageIndex: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	id := mustSession(b, s)
	const n = 10_000
	msgs := []model.NewMessage{{Role: model.RoleSystem, Content: model.TextContent("You are a careful assistant."), Tokens: 40}}
	for i := 2; len(msgs) < n; i++ {
		call := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("question %d about the order", i)), Tokens: 40},
			model.NewMessage{Role: model.RoleAssistant, Tokens: 40, ToolCalls: []model.ToolCall{{ID: call, Name: "lookup", Arguments: `{"q":1}`}}},
			model.NewMessage{Role: model.RoleTool, ToolCallID: &call, Content: model.TextContent(`{"status":"ok"}`), Tokens: 40},
			model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent(fmt.Sprintf("answer %d", i)), Tokens: 40})
	}
	for len(msgs) > 0 {
		k := min(len(msgs), model.MaxBatch)
		if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: msgs[:k]}); err != nil {
			b.Fatal(err)
		}
		msgs = msgs[k:]
	}
	budget := int64(4000)
	run := func(name string, q model.ContextQuery, want int) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				c, err := s.Context(ctx, "t", id, q)
				if err != nil || len(c.Messages) < want {
					b.Fatalf("%d messages, %v", len(c.Messages), err)
				}
			}
		})
	}
	run("max_tokens=4000", model.ContextQuery{MaxTokens: &budget}, 90)
	small := int64(1500) // ~36 messages: most reads decode only what they return
	run("max_tokens=1500", model.ContextQuery{MaxTokens: &small}, 30)
	if _, err := s.CreateCompaction(ctx, "t", id, model.CreateCompaction{ThroughSeq: n - 200,
		Summary: model.TextContent("Earlier: many order questions, all answered."), Tokens: 20}); err != nil {
		b.Fatal(err)
	}
	run("compacted/all_after", model.ContextQuery{}, 200)
	run("compacted/max_tokens=4000", model.ContextQuery{MaxTokens: &budget}, 90)
}
