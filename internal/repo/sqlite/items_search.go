package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// itemWhere is the condition of a search's, listing's or export's items:
// the space (every space with allUsers), live, under the prefix, passing the
// filter.
func itemWhere(tenant, user string, allUsers bool, prefix []string, filter []model.ItemCondition, now model.Time) (string, []any) {
	conds := []string{"i.tenant_id = ?", itemLive}
	args := []any{tenant, int64(now)}
	if !allUsers {
		conds, args = append(conds, "i.user_id = ?"), append(args, user)
	}
	if len(prefix) > 0 {
		exact, from, to := repo.ItemPrefixRange(prefix)
		conds = append(conds, "(i.namespace = ? OR (i.namespace >= ? AND i.namespace < ?))")
		args = append(args, exact, from, to)
	}
	for _, c := range filter {
		sql, a := itemCondition(c)
		conds, args = append(conds, sql), append(args, a...)
	}
	return strings.Join(conds, " AND "), args
}

// itemCondition is one filter condition (model.ItemCondition) on the
// value's top-level member, read with json_each so that any field name is
// matched exactly.
func itemCondition(c model.ItemCondition) (string, []any) {
	args := []any{c.Field}
	var alts []string
	for _, v := range c.Values {
		test, a := itemScalarTest(c.Op, v)
		alts, args = append(alts, "("+test+")"), append(args, a...)
	}
	exists := "EXISTS (SELECT 1 FROM json_each(i.value) j WHERE j.key = ? AND (" + strings.Join(alts, " OR ") + "))"
	if c.Op == model.OpNe || c.Op == model.OpNin {
		return "NOT " + exists, args
	}
	return exists, args
}

func itemScalarTest(op string, v model.FilterValue) (string, []any) {
	cmp := map[string]string{model.OpGt: ">", model.OpGte: ">=", model.OpLt: "<", model.OpLte: "<="}[op]
	if cmp == "" {
		cmp = "="
	}
	switch v.Kind {
	case model.ScalarString:
		return "j.type = 'text' AND j.atom " + cmp + " ?", []any{v.Str}
	case model.ScalarNumber:
		return "j.type IN ('integer', 'real') AND j.atom " + cmp + " ?", []any{v.Num}
	case model.ScalarBoolean:
		if v.Bool {
			return "j.type = 'true'", nil
		}
		return "j.type = 'false'", nil
	}
	return "j.type = 'null'", nil
}

// SearchItems pages through a space's items (see repo.Items).
func (s *Store) SearchItems(ctx context.Context, tenant, user string, in model.ItemSearch) (model.Page[model.ItemHit], error) {
	if err := s.faults.Check(repo.PointItemRead); err != nil {
		return model.Page[model.ItemHit]{}, err
	}
	now := model.Now()
	where, args := itemWhere(tenant, user, false, in.Prefix, in.Filter, now)
	if len(in.QueryEmbedding) > 0 {
		return s.searchItemsByMeaning(ctx, tenant, in, where, args)
	}
	q := repo.ItemFingerprint(user, in)
	afterNS, afterKey, ok, err := repo.ItemAfter(user, in)
	if err != nil {
		return model.Page[model.ItemHit]{}, err
	}
	if ok {
		where += " AND (i.namespace, i.key) > (?, ?)"
		args = append(args, afterNS, afterKey)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+repo.ItemColumns+` FROM items i WHERE `+where+`
		ORDER BY i.namespace, i.key LIMIT ? OFFSET ?`, append(args, in.Limit+1, in.Offset)...)
	if err != nil {
		return model.Page[model.ItemHit]{}, mapErr(err)
	}
	items, err := collectN(rows, in.Limit+1, scanItem)
	if err != nil {
		return model.Page[model.ItemHit]{}, err
	}
	return repo.ItemHits(repo.NewPage(items, in.Limit, func(last model.Item) repo.Cursor { return repo.ItemCursor(q, last) })), nil
}

// searchItemsByMeaning ranks the candidates by their embedded texts
// (repo.RankItems), streaming them, then reads the page's items.
func (s *Store) searchItemsByMeaning(ctx context.Context, tenant string, in model.ItemSearch, where string, args []any) (model.Page[model.ItemHit], error) {
	if err := s.faults.Check(repo.PointVectorSearch); err != nil {
		return model.Page[model.ItemHit]{}, err
	}
	vectors := func(visit func(repo.ItemCandidate, []float32)) error {
		rows, err := s.rdb.QueryContext(ctx, `SELECT i.id, i.namespace, i.key, v.embedding FROM items i
			LEFT JOIN item_vectors v ON v.tenant_id = i.tenant_id AND v.item_id = i.id AND v.state = 'ready' AND v.model = ?
			WHERE `+where, append([]any{in.QueryModel}, args...)...)
		if err != nil {
			return mapErr(err)
		}
		defer rows.Close()
		var (
			c   repo.ItemCandidate
			raw sql.RawBytes // read in place: a copy of every embedding would cost more than scoring it
			buf []float32
		)
		for rows.Next() {
			if err := rows.Scan(&c.ID, &c.Namespace, &c.Key, &raw); err != nil {
				return mapErr(err)
			}
			var vec []float32
			if raw != nil {
				buf = repo.DecodeVectorInto(buf, raw)
				vec = buf
			}
			visit(c, vec)
		}
		return mapErr(rows.Err())
	}
	ranked, more, err := repo.RankItems(in.QueryEmbedding, vectors, in.Offset, in.Limit)
	if err != nil || len(ranked) == 0 {
		return model.Page[model.ItemHit]{Data: []model.ItemHit{}, HasMore: more}, err
	}
	ids := make([]any, 0, len(ranked)+1)
	ids = append(ids, tenant)
	for _, r := range ranked {
		ids = append(ids, r.ID)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+repo.ItemColumns+` FROM items i WHERE i.tenant_id = ? AND i.id IN (?`+
		strings.Repeat(", ?", len(ranked)-1)+`)`, ids...)
	if err != nil {
		return model.Page[model.ItemHit]{}, mapErr(err)
	}
	items, err := collectN(rows, len(ranked), scanItem)
	if err != nil {
		return model.Page[model.ItemHit]{}, err
	}
	return model.Page[model.ItemHit]{Data: repo.OrderItems(ranked, items), HasMore: more}, nil
}

// ListNamespaces lists a space's namespaces (model.NamespaceQuery), reading
// the distinct namespaces under the listing's literal prefix.
func (s *Store) ListNamespaces(ctx context.Context, tenant, user string, in model.NamespaceQuery) (model.NamespacePage, error) {
	if err := s.faults.Check(repo.PointItemRead); err != nil {
		return model.NamespacePage{}, err
	}
	where, args := itemWhere(tenant, user, false, in.LiteralPrefix(), nil, model.Now())
	rows, err := s.rdb.QueryContext(ctx, `SELECT DISTINCT i.namespace FROM items i WHERE `+where, args...)
	if err != nil {
		return model.NamespacePage{}, mapErr(err)
	}
	all, err := collect(rows, func(sc scanner) (string, error) {
		var ns string
		return ns, sc.Scan(&ns)
	})
	if err != nil {
		return model.NamespacePage{}, err
	}
	return repo.PageNamespaces(in, all), nil
}
