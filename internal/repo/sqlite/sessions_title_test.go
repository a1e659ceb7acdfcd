package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// TestTitleFilterBothWays: reading the few sessions the trigram index finds
// and testing every title along the list's order answer the same pages,
// which are the titles model.TitleContains keeps.
func TestTitleFilterBothWays(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"Refund", "refund", "ORDER", "order", "Café", "CAFÉ", "50%", "a_b", `"q"`, "x", "日本"}
	var titles = map[string]string{}
	for i := range 300 {
		var w []string
		for range 1 + rng.IntN(3) {
			w = append(w, words[rng.IntN(len(words))])
		}
		in := model.CreateSession{ID: fmt.Sprintf("s%03d", i)}
		if i%10 != 0 {
			title := strings.Join(w, " ")
			in.Title = &title
			titles[in.ID] = title
		}
		if _, err := s.CreateSession(ctx, "t", in); err != nil {
			t.Fatal(err)
		}
	}
	// Another tenant's titles are found by the index too, never listed.
	other := "refund order"
	if _, err := s.CreateSession(ctx, "other", model.CreateSession{ID: "s001", Title: &other}); err != nil {
		t.Fatal(err)
	}
	list := func(f model.SessionFilter) []string {
		var ids []string
		p := repo.PageRequest{Limit: 7}
		for {
			page, err := s.ListSessions(ctx, "t", f, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, ses := range page.Data {
				ids = append(ids, ses.ID)
			}
			if !page.HasMore {
				return ids
			}
			p.Cursor = *page.NextCursor
		}
	}
	defer func(n int) { titleDriveMax = n }(titleDriveMax)
	for _, text := range []string{"refund", "REFUND ORDER", "fund", "café", "CAFÉ", "50%", "%", "a_b", "_", `"q"`, "日本", "x", "zebra", "er"} {
		t.Run(text, func(t *testing.T) {
			var want []string
			for id, title := range titles {
				if model.TitleContains(title, text) {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			slices.Reverse(want)
			f := model.SessionFilter{Title: text}
			titleDriveMax = 2000
			few := list(f)
			titleDriveMax = 0
			walked := list(f)
			if !slices.Equal(few, want) || !slices.Equal(walked, want) {
				t.Errorf("from the index: %v\nwalking: %v\nwant: %v", few, walked, want)
			}
			n, err := s.CountSessions(ctx, "t", f)
			if err != nil || n != (model.SessionCount{Count: int64(len(want)), Exact: true}) {
				t.Errorf("count: got %+v, %v, want %d", n, err, len(want))
			}
		})
	}
}

// TestTitleFilterReadsTheFew: with few titles found, the list reads those
// sessions by their key, not every session of the tenant.
func TestTitleFilterReadsTheFew(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	from, where, args, err := sessionsWhere(ctx, tx, "t", model.SessionFilter{Title: "refund"})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT id FROM `+from+` WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT 51`, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	got := strings.Join(plan, "; ")
	t.Logf("plan: %s", got)
	if !strings.Contains(got, "USING PRIMARY KEY (tenant_id=? AND id=?)") || strings.Contains(got, "sessions_by_created") {
		t.Errorf("plan: %s; want the sessions read by their key", got)
	}
}

// TestCountStopsAtTheMaximum: past model.SessionCountMax sessions, a count
// says "more than" rather than reading on.
func TestCountStopsAtTheMaximum(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	_, err := s.wdb.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO sessions (tenant_id, id, status, created_at, updated_at, title)
		SELECT 't', 's' || i, 'created', i, i, CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END FROM n`, model.SessionCountMax+50)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    model.SessionFilter
		want model.SessionCount
	}{
		{"past_the_maximum", model.SessionFilter{}, model.SessionCount{Count: model.SessionCountMax, Exact: false}},
		{"below_it", model.SessionFilter{Title: "even"}, model.SessionCount{Count: (model.SessionCountMax + 50) / 2, Exact: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.CountSessions(ctx, "t", tc.f)
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// BenchmarkListSessionsByTitle reads the first page of a list of 100,000
// sessions filtered by title: a text few titles contain (read through the
// trigram index), one half of them contain and one too short for the index
// (both walk the list's order), one no title contains, the list without the
// filter, and the count of a common text.
func BenchmarkListSessionsByTitle(b *testing.B) {
	s := mustOpen(b)
	ctx := context.Background()
	const n = 100_000
	_, err := s.wdb.ExecContext(ctx, `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
		INSERT INTO sessions (tenant_id, id, status, created_at, updated_at, title)
		SELECT 't', printf('s%06d', i), 'active', i, i,
			CASE WHEN i = 777 THEN 'Refund for order 777' WHEN i % 2 = 0 THEN 'Weekly report ' || i ELSE 'Chat with customer ' || i END FROM k`, n)
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name  string
		f     model.SessionFilter
		count bool
	}{
		{"rare_text", model.SessionFilter{Title: "refund"}, false},
		{"half_of_them", model.SessionFilter{Title: "weekly"}, false},
		{"two_characters", model.SessionFilter{Title: "wk"}, false},
		{"no_title_has_it", model.SessionFilter{Title: "zebra"}, false},
		{"no_filter", model.SessionFilter{}, false},
		{"count_half_of_them", model.SessionFilter{Title: "weekly"}, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if tc.count {
					if _, err := s.CountSessions(ctx, "t", tc.f); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, err := s.ListSessions(ctx, "t", tc.f, repo.PageRequest{Limit: 50}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
