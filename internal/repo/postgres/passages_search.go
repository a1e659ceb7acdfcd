package postgres

import (
	"context"
	"strconv"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// passageMaxTerms bounds the work one search can ask of the index, as on SQLite.
const passageMaxTerms = 32

// passageQueryTerms splits what a user or a model typed into the words SQLite's
// ftsQuery makes phrases of: runs of letters and digits, lower-cased, each once,
// at most passageMaxTerms. Nothing typed is ever query syntax, so no input is an
// error; none with no word finds nothing.
func passageQueryTerms(q string) []string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	seen := make(map[string]bool, len(words))
	out := make([]string, 0, min(len(words), passageMaxTerms))
	for _, w := range words {
		w = strings.ToLower(w)
		if seen[w] || len(out) == passageMaxTerms {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// searchPassagesKeyword ranks an agent's passages against a query. The tenant, agent
// and filters are conditions of the statement that ranks, applied before the
// LIMIT: filtering a ranked page afterwards would both leak and lose results.
//
// Where this differs from SQLite's FTS5 bm25:
//   - Each word is plainto_tsquery('english', word) and the words are OR'ed,
//     as SQLite ORs them, so a passage matching any word is a hit. English
//     stop words ("the", "is", "what") are not in passages.tsv at all and so
//     match nothing, where FTS5 (porter, no stop list) matches them; a query of
//     stop words only has no hits here. The Snowball stemmer and FTS5's porter
//     stemmer mostly, not always, fold words alike.
//   - The rank is -ts_rank_cd(tsv, query, 1) (negated: lower is better, as bm25
//     is reported). ts_rank_cd counts every occurrence of a query word and
//     divides by 1 + log(words in the passage); bm25 saturates repeated words
//     and weighs rare words (idf) over common ones, which ts_rank_cd cannot
//     know. The best hit is usually the same; ranks are not comparable values
//     and the order of weaker hits can differ.
//   - Ties (equal rank and created_at) go by id, descending; SQLite leaves them
//     in FTS5's order.
//   - The snippet marks the words PostgreSQL matched (passageSnippet), in a
//     16-word window chosen as FTS5 chooses it, approximately.
func (s *Store) searchPassagesKeyword(ctx context.Context, tenant, agentID string, in model.PassageSearch) ([]model.PassageHit, error) {
	if err := s.faults.Check(repo.PointArchivalRead); err != nil {
		return nil, err
	}
	if err := memAgentExists(ctx, s.pool, tenant, agentID); err != nil {
		return nil, err
	}
	terms := passageQueryTerms(in.Query)
	if len(terms) == 0 {
		return []model.PassageHit{}, nil
	}
	args := []any{tenant, agentID}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	tsq := make([]string, len(terms))
	for i, t := range terms {
		tsq[i] = "plainto_tsquery('english', " + arg(t) + "::text)"
	}
	where := []string{"p.tenant_id = $1", "p.agent_id = $2", "p.tsv @@ q.q", passageLivePG(arg(int64(model.Now())))}
	for _, tag := range in.Tags {
		where = append(where, passageTaggedPG(arg(tag)))
	}
	if in.After != nil {
		where = append(where, "p.created_at >= "+arg(int64(*in.After))+"::bigint")
	}
	if in.Before != nil {
		where = append(where, "p.created_at <= "+arg(int64(*in.Before))+"::bigint")
	}
	// SQLite reads a negative LIMIT as none and a negative OFFSET as 0;
	// PostgreSQL refuses both.
	var limit *int
	if in.Limit >= 0 {
		limit = &in.Limit
	}
	page := " LIMIT " + arg(limit) + "::bigint OFFSET " + arg(max(in.Offset, 0)) + "::bigint"
	// The headline is made for the page only, not for every match.
	rows, err := s.pool.Query(ctx, `SELECT `+passageColumns+`, ts_headline('english', p.content, p.q, `+arg(passageHeadlineOptions)+`), p.rank
		FROM (SELECT p.*, q.q, -ts_rank_cd(p.tsv, q.q, 1) AS rank
			FROM passages p, (SELECT `+strings.Join(tsq, " || ")+` AS q) q
			WHERE `+strings.Join(where, " AND ")+`
			ORDER BY rank, p.created_at DESC, p.id COLLATE "C" DESC`+page+`) p
		ORDER BY p.rank, p.created_at DESC, p.id COLLATE "C" DESC`, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.PassageHit, error) {
		var (
			h      model.PassageHit
			marked string
		)
		p, err := scanPassage(r, &marked, &h.Rank)
		h.Passage, h.Snippet = p, passageSnippet(marked)
		return h, err
	})
	if err != nil {
		return nil, mapErr(err)
	}
	if hits == nil {
		hits = []model.PassageHit{}
	}
	return hits, nil
}
