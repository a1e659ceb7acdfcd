package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// The passages of SQLite's ranking test, by name.
var memRankingPassages = map[string]string{
	"coffee": "The user drinks black coffee every morning, no sugar.",
	"cat":    "The user has a cat named Miso who likes boxes.",
	"trip":   "The user is planning a trip to Lisbon in May with friends.",
	"job":    "The user works as a nurse on night shifts at the city hospital.",
	"allergy": "The user is allergic to peanuts; avoid recipes that contain peanuts or peanut oil. " +
		"Peanuts caused a hospital visit once.",
	"garden": "The user grows tomatoes and basil on the balcony garden.",
}

// memRankingAgent makes agent a of tenant t with those passages and returns
// their names by id.
func memRankingAgent(t *testing.T, m repo.Memory) map[string]string {
	t.Helper()
	ctx := context.Background()
	if _, err := m.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for name, text := range memRankingPassages {
		p, err := m.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: text, Tags: []string{name}})
		if err != nil {
			t.Fatal(err)
		}
		names[p.ID] = name
	}
	return names
}

// Each query's best hit is the one SQLite's bm25 ranks first.
func TestMemorySearchRanking(t *testing.T) {
	ctx := context.Background()
	ref, pg := memBothBackends(t)
	refNames, pgNames := memRankingAgent(t, ref.m), memRankingAgent(t, pg.m)
	for _, tc := range []struct{ query, want string }{
		{"coffee", "coffee"},
		{"what is the cat called?", "cat"},
		{"travel plans Lisbon", "trip"},
		{"peanut", "allergy"},           // stemming: peanut ~ peanuts
		{"hospital peanuts", "allergy"}, // two matching words beat one
		{"night shift nurse", "job"},
		{"TOMATOES", "garden"},                 // case does not matter
		{`"basil" AND NEAR(tomato*`, "garden"}, // query syntax is just words
	} {
		t.Run(tc.query, func(t *testing.T) {
			for _, b := range []struct {
				m     repo.Memory
				names map[string]string
			}{{ref.m, refNames}, {pg.m, pgNames}} {
				hits, err := b.m.SearchPassages(ctx, "t", "a", model.PassageSearch{Query: tc.query, Limit: 3})
				if err != nil {
					t.Fatal(err)
				}
				got := []string{}
				for _, h := range hits {
					got = append(got, b.names[h.ID])
				}
				if len(hits) == 0 || got[0] != tc.want {
					t.Fatalf("%T: top hits %v, want %s first", b.m, got, tc.want)
				}
				if !strings.Contains(hits[0].Snippet, "[") {
					t.Errorf("%T: snippet %q marks no match", b.m, hits[0].Snippet)
				}
				for i := 1; i < len(hits); i++ {
					if hits[i].Rank < hits[i-1].Rank {
						t.Errorf("%T: ranks %v, %v out of order (lower is better)", b.m, hits[i-1].Rank, hits[i].Rank)
					}
				}
			}
		})
	}
}

// Snippets: the same 16-word window with the same marks and ellipses as
// SQLite's FTS5 snippet() makes, where the stemmers agree.
func TestMemorySearchSnippets(t *testing.T) {
	ctx := context.Background()
	long := "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma " +
		"tau upsilon phi chi psi omega coffee end of the words here and more words after them to go on."
	ref, pg := memBothBackends(t)
	for _, b := range []*memBackend{ref, pg} {
		if _, err := b.m.CreateAgent(ctx, "t", model.CreateAgent{ID: "a", Name: "a"}); err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{memRankingPassages["coffee"], memRankingPassages["allergy"], long,
			"  \"Quoted\" start: then a colon: and a new sentence. Coffee black coffee; more coffee after that, " +
				"and on and on until the window is over. Last words here, coffee again.\n"} {
			if _, err := b.m.CreatePassage(ctx, "t", "a", model.CreatePassage{Content: text}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{"coffee", "peanut", "hospital", "omega", "sugar morning",
		"alpha omega", "peanut hospital visit", "quoted", "black coffee", "words", "sentence colon"} {
		want, err := ref.m.SearchPassages(ctx, "t", "a", model.PassageSearch{Query: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.m.SearchPassages(ctx, "t", "a", model.PassageSearch{Query: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		snippets := func(hits []model.PassageHit) map[string]string {
			m := map[string]string{}
			for _, h := range hits {
				m[h.Content] = h.Snippet
			}
			return m
		}
		w, g := snippets(want), snippets(got)
		if len(w) != len(g) {
			t.Errorf("%q: %d hits, SQLite %d", q, len(g), len(w))
		}
		for content, ws := range w {
			if g[content] != ws {
				t.Errorf("%q in %.20q…:\n got  %q\n want %q", q, content, g[content], ws)
			}
		}
	}
}

// Agents see only their own passages, and tenants only theirs: the conditions
// are in the ranking query, so neither leaks nor loses results to another's
// better hits.
func TestMemorySearchIsolation(t *testing.T) {
	ctx := context.Background()
	st := mustOpen(t)
	for _, tenant := range []string{"t1", "t2"} {
		for _, agent := range []string{"a", "b"} {
			if _, err := st.CreateAgent(ctx, tenant, model.CreateAgent{ID: agent, Name: agent}); err != nil {
				t.Fatal(err)
			}
			// many strong hits for everyone else, weak ones for t1/a
			for i := range 20 {
				content := fmt.Sprintf("secret secret secret of %s/%s #%d", tenant, agent, i)
				if tenant == "t1" && agent == "a" {
					content = fmt.Sprintf("one secret of t1/a #%d and much other text to weaken its rank", i)
				}
				if _, err := st.CreatePassage(ctx, tenant, agent, model.CreatePassage{Content: content}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	hits, err := st.SearchPassages(ctx, "t1", "a", model.PassageSearch{Query: "secret", Limit: 5})
	if err != nil || len(hits) != 5 {
		t.Fatalf("%d hits (%v), want 5 of t1/a's own", len(hits), err)
	}
	for _, h := range hits {
		if !strings.Contains(h.Content, "of t1/a") {
			t.Errorf("t1/a found %q", h.Content)
		}
	}
	all, err := st.SearchPassages(ctx, "t1", "a", model.PassageSearch{Query: "secret", Limit: 100, Offset: 15})
	if err != nil || len(all) != 5 {
		t.Errorf("offset 15 of 20: %d hits (%v)", len(all), err)
	}
	if none, err := st.SearchPassages(ctx, "t3", "a", model.PassageSearch{Query: "secret", Limit: 5}); !model.IsNotFound(err, "agent") {
		t.Errorf("another tenant's agent: %d hits (%v)", len(none), err)
	}
}
