package sqlite

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// What a conversation search may cost. FTS5's bm25 weighs each word by how
// many rows of the whole index hold it, and counts them by reading the word's
// every row, once per search: a word in half of ten million messages costs
// seconds before the first hit is ranked. So a search ranks with bm25 only the
// words that are rare enough (together at most rankedRows rows of the index)
// and reads every hit of those; the other words are matched newest first (the
// index's rowid order), without a rank, reading at most recentRows(limit)
// rows, and the answer says it is partial. See docs/scale.md, Search.
const (
	// rankedRows bounds the index rows, over the whole file, that the ranked
	// words of one search may hold together.
	rankedRows = 2000
	// scopedRows is how many stored messages a session's lineage may hold
	// for its own scope tokens to narrow a ranked search (bm25 reads a
	// token's every row too); a larger one is narrowed row by row.
	scopedRows = 5000
	// recentMinRows is the least the newest-first pass reads.
	recentMinRows = 200
)

// recentRows is how many index rows the newest-first pass may read for an
// answer of limit hits.
func recentRows(limit int) int { return max(recentMinRows, 4*limit) }

// hitKey names a candidate message by where it is stored.
type hitKey struct {
	session string
	seq     int64
}

// candidate is a message the index matched, in the order it is to be
// answered: rank (0 for the newest-first pass), then newest first.
type candidate struct {
	hitKey
	rank float64
}

// searchMessagesKeyword answers a keyword search of a tenant's messages: those
// of one agent (its sessions, or messages carrying its id) when in.AgentID is
// set, of one session's history when in.SessionID is. Hits of the query's
// ranked words come first, best bm25 first; then, when some words were too
// common to rank, hits of those words alone, newest first, with rank 0 and
// Partial set. IndexLag says how many of the tenant's messages are not
// searchable yet.
func (s *Store) searchMessagesKeyword(ctx context.Context, tenant string, in model.MessageSearch) (model.SearchResult[model.MessageHit], error) {
	var out model.SearchResult[model.MessageHit]
	if err := s.faults.Check(repo.PointMessageRead); err != nil {
		return out, err
	}
	if in.AgentID != "" {
		if err := agentExists(ctx, s.rdb, tenant, in.AgentID); err != nil {
			return out, err
		}
	}
	if s.idb == nil {
		return out, model.Errorf(model.KindUnavailable, "storage_unavailable", "this store was opened without its search index")
	}
	var err error
	if out.IndexLag, err = s.lag.lag(ctx, s.rdb, tenant); err != nil {
		return out, mapErr(err)
	}
	out.Data = []model.MessageHit{}
	terms := repo.QueryTerms(in.Query)
	if len(terms) == 0 {
		return out, nil
	}
	sc := searchScope{tenant: tenant}
	if in.SessionID != "" {
		if sc.segs, err = s.readLineage(ctx, tenant, in.SessionID); err != nil {
			return out, mapErr(err)
		}
		if sc.small, err = s.lineageIsSmall(ctx, tenant, sc.segs); err != nil {
			return out, mapErr(err)
		}
	}
	ranked, recent, err := s.splitTerms(ctx, terms)
	if err != nil {
		return out, mapErr(err)
	}
	seen := map[hitKey]bool{}
	if len(ranked) > 0 {
		cands, err := s.rankedCandidates(ctx, sc, ranked)
		if err != nil {
			return out, mapErr(err)
		}
		if out.Data, err = s.readHits(ctx, tenant, in, cands, in.Limit, seen); err != nil {
			return out, err
		}
	}
	if len(recent) > 0 {
		out.Partial = true
		if len(out.Data) < in.Limit {
			cands, err := s.recentCandidates(ctx, sc, recent, recentRows(in.Limit))
			if err != nil {
				return out, mapErr(err)
			}
			more, err := s.readHits(ctx, tenant, in, cands, in.Limit-len(out.Data), seen)
			if err != nil {
				return out, err
			}
			out.Data = append(out.Data, more...)
		}
	}
	return out, nil
}

// searchScope is where a search looks: a tenant, or one session's lineage.
type searchScope struct {
	tenant string
	segs   []segment // nil: the whole tenant
	small  bool      // segs' sessions hold at most scopedRows messages together
}

// match is the FTS5 expression of words within the scope: with scoped, the
// scope's tokens narrow the match in the index itself.
func (sc searchScope) match(words []string, scoped bool) string {
	expr := "{content} : (" + ftsQuery(strings.Join(words, " ")) + ")"
	if !scoped {
		return expr
	}
	if sc.segs == nil {
		return "{scope} : " + tenantToken(sc.tenant) + " AND " + expr
	}
	toks := make([]string, len(sc.segs))
	for i, g := range sc.segs {
		toks[i] = sessionToken(sc.tenant, g.owner)
	}
	return "{scope} : (" + strings.Join(toks, " OR ") + ") AND " + expr
}

// where is the condition, on the index's own columns, that a row is the
// scope's: its tenant, and for a lineage, a seq its session stores for it. A
// fork's history is one segment per session that stores part of it, passed as
// one JSON list rather than an OR per segment, which SQLite's expression depth
// limit would refuse for a deep chain of forks.
func (sc searchScope) where() (string, []any) {
	if sc.segs == nil {
		return "tenant_id = ?", []any{sc.tenant}
	}
	list := make([][3]any, len(sc.segs))
	for i, g := range sc.segs {
		list[i] = [3]any{g.owner, g.lo, min(g.hi, math.MaxInt64>>1)}
	}
	b, _ := json.Marshal(list)
	return `tenant_id = ? AND EXISTS (SELECT 1 FROM json_each(?) g WHERE session_id = g.value->>0
		AND seq > g.value->>1 AND seq <= g.value->>2)`, []any{sc.tenant, string(b)}
}

// lineageIsSmall says whether the sessions that store a lineage hold at most
// scopedRows messages (counted from their last seqs, which a fork's includes
// its inherited prefix in: an overcount, never an undercount).
func (s *Store) lineageIsSmall(ctx context.Context, tenant string, segs []segment) (bool, error) {
	owners := make([]any, 0, len(segs)+1)
	owners = append(owners, tenant)
	for _, g := range segs {
		owners = append(owners, g.owner)
	}
	var n int64
	err := s.rdb.QueryRowContext(ctx, `SELECT COALESCE(SUM(last_seq), 0) FROM sessions WHERE tenant_id = ? AND id IN (?`+
		strings.Repeat(", ?", len(segs)-1)+`)`, owners...).Scan(&n)
	return n <= scopedRows, err
}

// splitTerms sorts the query's words into those bm25 can rank at a bounded
// cost (together in at most rankedRows rows of the index, rarest first) and
// those to match newest first. Each word's rows are counted only up to the
// bound. Words no row holds are dropped.
func (s *Store) splitTerms(ctx context.Context, terms []string) (ranked, recent []string, err error) {
	type counted struct {
		word string
		n    int64
	}
	cs := make([]counted, 0, len(terms))
	for _, t := range terms {
		var n int64
		if err := s.rdb.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM idx.messages_fts WHERE messages_fts MATCH ? LIMIT ?)`,
			"{content} : "+ftsQuery(t), rankedRows+1).Scan(&n); err != nil {
			return nil, nil, err
		}
		if n > 0 {
			cs = append(cs, counted{t, n})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].n < cs[j].n })
	var sum int64
	for _, c := range cs {
		if sum += c.n; sum <= rankedRows {
			ranked = append(ranked, c.word)
		} else {
			recent = append(recent, c.word)
		}
	}
	return ranked, recent, nil
}

// rankedCandidates ranks every row of the scope that holds a ranked word with
// bm25, each message once with its best part, best first. The scope column
// weighs nothing. A small lineage is narrowed by its tokens in the index (bm25
// then also reads their rows: few); otherwise each of the words' rows is
// checked against the scope, and there are at most rankedRows of them.
func (s *Store) rankedCandidates(ctx context.Context, sc searchScope, words []string) ([]candidate, error) {
	where, args := sc.where()
	rows, err := s.rdb.QueryContext(ctx, `WITH h AS MATERIALIZED (
			SELECT rowid AS r, session_id, seq, bm25(messages_fts, 1.0, 0.0) AS rank
			FROM idx.messages_fts WHERE messages_fts MATCH ? AND `+where+`)
		SELECT session_id, seq, MIN(rank) AS best FROM h GROUP BY session_id, seq ORDER BY best, MAX(r) DESC`,
		append([]any{sc.match(words, sc.segs != nil && sc.small)}, args...)...)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (candidate, error) {
		var c candidate
		return c, r.Scan(&c.session, &c.seq, &c.rank)
	})
}

// recentCandidates lists the scope's rows that hold one of words, newest
// first, reading at most limit rows of the index; the scope's tokens narrow
// the match in the index, so the rows it reads are the scope's own.
func (s *Store) recentCandidates(ctx context.Context, sc searchScope, words []string, limit int) ([]candidate, error) {
	where, args := sc.where()
	rows, err := s.rdb.QueryContext(ctx, `SELECT session_id, seq FROM idx.messages_fts
		WHERE messages_fts MATCH ? AND `+where+` ORDER BY rowid DESC LIMIT ?`,
		append(append([]any{sc.match(words, true)}, args...), limit)...)
	if err != nil {
		return nil, err
	}
	cands, err := collect(rows, func(r scanner) (candidate, error) {
		var c candidate
		return c, r.Scan(&c.session, &c.seq)
	})
	if err != nil {
		return nil, err
	}
	// A long message's parts are neighbours in rowid order: keep each once.
	out := cands[:0]
	for i, c := range cands {
		if i == 0 || c.hitKey != cands[i-1].hitKey {
			out = append(out, c)
		}
	}
	return out, nil
}

// readHits reads the candidates' messages in order, a few at a time, keeping
// those that pass the search's filters and no earlier pass returned, until it
// has want of them: a filter that passes most hits reads about want messages,
// however many candidates there are.
func (s *Store) readHits(ctx context.Context, tenant string, in model.MessageSearch, cands []candidate, want int, seen map[hitKey]bool) ([]model.MessageHit, error) {
	join, where := "", []string{}
	var filterArgs []any
	if in.AgentID != "" {
		join = " JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id"
		where, filterArgs = append(where, "(s.agent_id = ? OR m.agent_id = ?)"), append(filterArgs, in.AgentID, in.AgentID)
	}
	if in.SessionID == "" {
		// A hit names the session that stores it: none past its expires_at.
		// (A fork's search reads its inherited prefix whatever its parent's.)
		where = append(where, "NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = m.tenant_id AND x.id = m.session_id AND x.expires_at <= ?)")
		filterArgs = append(filterArgs, int64(model.Now()))
	}
	if len(in.Roles) > 0 {
		where = append(where, "m.role IN (?"+strings.Repeat(", ?", len(in.Roles)-1)+")")
		for _, r := range in.Roles {
			filterArgs = append(filterArgs, r)
		}
	}
	if in.After != nil {
		where, filterArgs = append(where, "m.created_at >= ?"), append(filterArgs, int64(*in.After))
	}
	if in.Before != nil {
		where, filterArgs = append(where, "m.created_at <= ?"), append(filterArgs, int64(*in.Before))
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	query := `SELECT m.session_id, m.seq, m.id, m.role, m.created_at, m.content
		FROM json_each(?) j CROSS JOIN messages m ON m.tenant_id = ? AND m.session_id = j.value->>0 AND m.seq = j.value->>1` + join + cond

	var out []model.MessageHit
	chunk := max(16, 2*want)
	for lo := 0; lo < len(cands) && len(out) < want; lo += chunk {
		part := cands[lo:min(lo+chunk, len(cands))]
		list := make([][2]any, 0, len(part))
		for _, c := range part {
			if !seen[c.hitKey] {
				list = append(list, [2]any{c.session, c.seq})
			}
		}
		if len(list) == 0 {
			continue
		}
		b, _ := json.Marshal(list)
		rows, err := s.rdb.QueryContext(ctx, query, append([]any{string(b), tenant}, filterArgs...)...)
		if err != nil {
			return nil, mapErr(err)
		}
		found := map[hitKey]model.MessageHit{}
		for rows.Next() {
			var h model.MessageHit
			if err := rows.Scan(&h.SessionID, &h.Seq, &h.MessageID, &h.Role, &h.CreatedAt, &h.Content); err != nil {
				rows.Close()
				return nil, mapErr(err)
			}
			found[hitKey{h.SessionID, h.Seq}] = h
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, mapErr(err)
		}
		for _, c := range part {
			h, ok := found[c.hitKey]
			if !ok || seen[c.hitKey] || len(out) == want {
				continue
			}
			seen[c.hitKey] = true
			h.Rank = c.rank
			h.Snippet = repo.Snippet(h.Content, in.Query)
			if in.SessionID != "" {
				h.SessionID = in.SessionID // inherited messages read as the fork's own
			}
			out = append(out, h)
		}
		chunk *= 2
	}
	if out == nil {
		out = []model.MessageHit{}
	}
	return out, nil
}
