package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// insertSessionRow puts a session with lastSeq messages' worth of counter in
// place, without the session code, for tests of what hangs off a session.
func insertSessionRow(t *testing.T, url, id, status string, lastSeq int64) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `INSERT INTO sessions (tenant_id, id, status, last_seq, message_count, created_at, updated_at)
		VALUES ('t', $1, $2, $3, $3, 1, 1)`, id, status, lastSeq); err != nil {
		t.Fatal(err)
	}
}

func TestCompactionsPG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	st := mustOpenURL(t, url)
	insertSessionRow(t, url, "s", "active", 9)
	insertSessionRow(t, url, "closed", "completed", 9)
	model7 := "m"
	first, err := st.CreateCompaction(ctx, "t", "s", model.CreateCompaction{ThroughSeq: 3, Summary: model.TextContent("one"), Tokens: 4, Model: &model7,
		ProviderItem: model.ProviderItem(`{"type":"compaction","x":[1,2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	text := "two"
	if _, err := st.CreateCompaction(ctx, "t", "s", model.CreateCompaction{ThroughSeq: 5,
		Summary: model.Content{Text: text, Parts: []model.Part{{Type: model.PartText, Text: &text}}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		session string
		through int64
		code    string
	}{
		{"s", 5, "validation_failed"},
		{"s", 10, "validation_failed"},
		{"closed", 1, "session_closed"},
		{"nope", 1, "not_found"},
	} {
		_, err := st.CreateCompaction(ctx, "t", tc.session, model.CreateCompaction{ThroughSeq: tc.through, Summary: model.TextContent("x")})
		if model.AsError(err).Code != tc.code {
			t.Errorf("%s through %d: %v, want %s", tc.session, tc.through, err, tc.code)
		}
	}
	page, err := st.ListCompactions(ctx, "t", "s", repo.PageRequest{Limit: 1})
	if err != nil || len(page.Data) != 1 || page.Data[0].ThroughSeq != 5 || !page.HasMore || page.Data[0].Summary.Parts == nil {
		t.Fatalf("first page %+v %v", page, err)
	}
	next, err := st.ListCompactions(ctx, "t", "s", repo.PageRequest{Limit: 1, Cursor: *page.NextCursor})
	if err != nil || len(next.Data) != 1 || next.HasMore {
		t.Fatalf("second page %+v %v", next, err)
	}
	if got := next.Data[0]; got.ID != first.ID || string(got.ProviderItem) != `{"type":"compaction","x":[1,2]}` || *got.Model != "m" {
		t.Errorf("read back %+v", got)
	}
	if _, err := st.ListCompactions(ctx, "t", "nope", repo.PageRequest{}); !model.IsNotFound(err, "session") {
		t.Errorf("missing session: %v", err)
	}
}
