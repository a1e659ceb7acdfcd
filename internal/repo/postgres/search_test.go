package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
)

// insertMessageRows stores messages straight in the table (the search index is
// the database's own trigger), for tests of what reads them.
func insertMessageRows(t *testing.T, url, session string, contents ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for i, c := range contents {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if _, err := conn.Exec(ctx, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, tokens, cost, created_at,
			gid, cum_tokens, cum_cost) VALUES ('t', $1, $2, $3, $4, $5, 0, 0, $2, nextval('messages_gid'), 0, 0)`,
			session, i+1, session+"-m"+string(rune('a'+i)), role, c); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSearchMessagesPG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	st := mustOpenURL(t, url)
	insertSessionRow(t, url, "s", "active", 4)
	long := strings.Repeat("filler words here ", 1000) + "zanzibar" // past the first 8,000-character part
	insertMessageRows(t, url, "s", "Where is my teapot refund?", "The refunds are processed weekly.", long, "nothing to see")
	insertSessionRow(t, url, "other", "active", 1)
	insertMessageRows(t, url, "other", "another teapot")

	for _, tc := range []struct {
		name  string
		in    model.MessageSearch
		seqs  []int64
		roles []model.Role
	}{
		{"stemmed", model.MessageSearch{Query: "refund", Limit: 10, SessionID: "s"}, []int64{1, 2}, nil},
		{"tenant wide", model.MessageSearch{Query: "teapot", Limit: 10}, []int64{1, 1}, nil},
		{"role", model.MessageSearch{Query: "refund", Limit: 10, Roles: []model.Role{model.RoleAssistant}}, []int64{2}, nil},
		{"a later part", model.MessageSearch{Query: "zanzibar", Limit: 10}, []int64{3}, nil},
		{"operators are words", model.MessageSearch{Query: `teapot" OR 1=1 -- & | !`, Limit: 10, SessionID: "s"}, []int64{1}, nil},
		{"no words", model.MessageSearch{Query: "!!!", Limit: 10}, nil, nil},
		{"stop words only", model.MessageSearch{Query: "the", Limit: 10}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := st.SearchMessages(ctx, "t", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, h := range res.Data {
				seqs = append(seqs, h.Seq)
			}
			if len(seqs) != len(tc.seqs) {
				t.Fatalf("hits %v, want seqs %v", res.Data, tc.seqs)
			}
			for i := range seqs {
				if seqs[i] != tc.seqs[i] && tc.name != "stemmed" {
					t.Errorf("hit %d is seq %d, want %d", i, seqs[i], tc.seqs[i])
				}
			}
			if res.IndexLag != 0 {
				t.Errorf("index lag %d: PostgreSQL indexes in the appending transaction", res.IndexLag)
			}
		})
	}
	res, _ := st.SearchMessages(ctx, "t", model.MessageSearch{Query: "teapot", Limit: 10, SessionID: "s"})
	if len(res.Data) != 1 || !strings.Contains(res.Data[0].Snippet, "[teapot]") || res.Data[0].SessionID != "s" {
		t.Errorf("snippet %+v", res.Data)
	}
	if _, err := st.SearchMessages(ctx, "t", model.MessageSearch{Query: "x", AgentID: "nobody", Limit: 10}); !model.IsNotFound(err, "agent") {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := st.SearchMessages(ctx, "t", model.MessageSearch{Query: "x", SessionID: "nope", Limit: 10}); !model.IsNotFound(err, "session") {
		t.Errorf("unknown session: %v", err)
	}
}

// A word in more rows than a search ranks is ranked among the rows the index
// gives first, and the answer says it is partial; a rare word is ranked whole.
// A small session is read whole by its primary key, whatever the tenant holds.
func TestSearchBoundsCommonWordsPG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	st := mustOpenURL(t, url)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	insertSessionRow(t, url, "bulk", "active", 2100)
	if _, err := conn.Exec(ctx, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, tokens, cost, created_at,
		gid, cum_tokens, cum_cost) SELECT 't', 'bulk', n, 'm' || n, 'user', 'plain chatter number' || n, 0, 0, n,
		nextval('messages_gid'), 0, 0 FROM generate_series(1, 2100) n`); err != nil {
		t.Fatal(err)
	}
	insertSessionRow(t, url, "few", "active", 2)
	insertMessageRows(t, url, "few", "a heron by the river", "heron chatter")
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		in      model.MessageSearch
		hits    int
		partial bool
	}{
		{"rare", model.MessageSearch{Query: "heron", Limit: 10}, 2, false},
		{"common", model.MessageSearch{Query: "chatter", Limit: 10}, 10, true},
		{"common within a small session", model.MessageSearch{Query: "chatter", SessionID: "few", Limit: 10}, 1, false},
		{"common within a large session", model.MessageSearch{Query: "chatter", SessionID: "bulk", Limit: 5}, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := st.SearchMessages(ctx, "t", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Data) != tc.hits || res.Partial != tc.partial {
				t.Errorf("%d hits, partial %v; want %d, %v", len(res.Data), res.Partial, tc.hits, tc.partial)
			}
			for _, h := range res.Data {
				if tc.in.SessionID != "" && h.SessionID != tc.in.SessionID {
					t.Errorf("hit of session %s", h.SessionID)
				}
			}
		})
	}
}
