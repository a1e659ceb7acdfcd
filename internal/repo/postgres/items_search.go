package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// itemWherePG is SQLite's itemWhere, its arguments numbered from $1.
func itemWherePG(tenant, user string, allUsers bool, prefix []string, filter []model.ItemCondition, now model.Time) (string, []any) {
	args := []any{tenant, int64(now)}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	conds := []string{"i.tenant_id = $1", itemLivePG("$2")}
	if !allUsers {
		conds = append(conds, "i.user_id = "+arg(user))
	}
	if len(prefix) > 0 {
		exact, from, to := repo.ItemPrefixRange(prefix)
		conds = append(conds, "(i.namespace = "+arg(exact)+" OR (i.namespace >= "+arg(from)+" AND i.namespace < "+arg(to)+"))")
	}
	for _, c := range filter {
		var alts []string
		for _, v := range c.Values {
			alts = append(alts, "("+itemScalarTestPG(c.Op, v, arg)+")")
		}
		exists := "EXISTS (SELECT 1 FROM json_each(i.value) j WHERE j.key = " + arg(c.Field) + "::text AND (" + strings.Join(alts, " OR ") + "))"
		if c.Op == model.OpNe || c.Op == model.OpNin {
			exists = "NOT " + exists
		}
		conds = append(conds, exists)
	}
	return strings.Join(conds, " AND "), args
}

// itemScalarTestPG is SQLite's itemScalarTest on json_each's j.value: a
// number compares as numeric (exact, whatever its size), a string bytewise.
// The casts sit behind CASE, so that PostgreSQL never casts a value of
// another kind.
func itemScalarTestPG(op string, v model.FilterValue, arg func(any) string) string {
	cmp := map[string]string{model.OpGt: ">", model.OpGte: ">=", model.OpLt: "<", model.OpLte: "<="}[op]
	if cmp == "" {
		cmp = "="
	}
	switch v.Kind {
	case model.ScalarString:
		return "CASE WHEN json_typeof(j.value) = 'string' THEN (j.value #>> '{}') COLLATE \"C\" " + cmp + " " + arg(v.Str) + "::text ELSE false END"
	case model.ScalarNumber:
		return "CASE WHEN json_typeof(j.value) = 'number' THEN (j.value #>> '{}')::numeric " + cmp + " " +
			arg(strconv.FormatFloat(v.Num, 'g', -1, 64)) + "::numeric ELSE false END"
	case model.ScalarBoolean:
		return "json_typeof(j.value) = 'boolean' AND (j.value #>> '{}') = " + arg(strconv.FormatBool(v.Bool)) + "::text"
	}
	return "json_typeof(j.value) = 'null'"
}

// SearchItems pages through a space's items (see repo.Items), as SQLite's.
func (s *Store) SearchItems(ctx context.Context, tenant, user string, in model.ItemSearch) (model.Page[model.ItemHit], error) {
	if err := s.faults.Check(repo.PointItemRead); err != nil {
		return model.Page[model.ItemHit]{}, err
	}
	where, args := itemWherePG(tenant, user, false, in.Prefix, in.Filter, model.Now())
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(in.QueryEmbedding) > 0 {
		return s.searchItemsByMeaningPG(ctx, tenant, in, where, args)
	}
	q := repo.ItemFingerprint(user, in)
	afterNS, afterKey, ok, err := repo.ItemAfter(user, in)
	if err != nil {
		return model.Page[model.ItemHit]{}, err
	}
	if ok {
		where += " AND (i.namespace, i.key) > (" + arg(afterNS) + "::text COLLATE \"C\", " + arg(afterKey) + "::text COLLATE \"C\")"
	}
	rows, err := s.pool.Query(ctx, `SELECT `+repo.ItemColumns+` FROM items i WHERE `+where+`
		ORDER BY i.namespace, i.key LIMIT `+arg(in.Limit+1)+` OFFSET `+arg(in.Offset), args...)
	if err != nil {
		return model.Page[model.ItemHit]{}, mapErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Item, error) { return scanItemPG(r) })
	if err != nil {
		return model.Page[model.ItemHit]{}, mapErr(err)
	}
	return repo.ItemHits(repo.NewPage(items, in.Limit, func(last model.Item) repo.Cursor { return repo.ItemCursor(q, last) })), nil
}

// searchItemsByMeaningPG is SQLite's searchItemsByMeaning.
func (s *Store) searchItemsByMeaningPG(ctx context.Context, tenant string, in model.ItemSearch, where string, args []any) (model.Page[model.ItemHit], error) {
	if err := s.faults.Check(repo.PointVectorSearch); err != nil {
		return model.Page[model.ItemHit]{}, err
	}
	vectors := func(visit func(repo.ItemCandidate, []float32)) error {
		n := "$" + strconv.Itoa(len(args)+1)
		rows, err := s.pool.Query(ctx, `SELECT i.id, i.namespace, i.key, v.embedding FROM items i
			LEFT JOIN item_vectors v ON v.tenant_id = i.tenant_id AND v.item_id = i.id AND v.state = 'ready' AND v.model = `+n+`::text
			WHERE `+where, append(args, in.QueryModel)...)
		if err != nil {
			return mapErr(err)
		}
		defer rows.Close()
		var (
			c   repo.ItemCandidate
			raw []byte
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
	ids := make([]string, len(ranked))
	for i, r := range ranked {
		ids[i] = r.ID
	}
	rows, err := s.pool.Query(ctx, `SELECT `+repo.ItemColumns+` FROM items i WHERE i.tenant_id = $1 AND i.id = ANY($2::text[])`, tenant, ids)
	if err != nil {
		return model.Page[model.ItemHit]{}, mapErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Item, error) { return scanItemPG(r) })
	if err != nil {
		return model.Page[model.ItemHit]{}, mapErr(err)
	}
	return model.Page[model.ItemHit]{Data: repo.OrderItems(ranked, items), HasMore: more}, nil
}

// ListNamespaces is SQLite's.
func (s *Store) ListNamespaces(ctx context.Context, tenant, user string, in model.NamespaceQuery) (model.NamespacePage, error) {
	if err := s.faults.Check(repo.PointItemRead); err != nil {
		return model.NamespacePage{}, err
	}
	where, args := itemWherePG(tenant, user, false, in.LiteralPrefix(), nil, model.Now())
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT i.namespace FROM items i WHERE `+where, args...)
	if err != nil {
		return model.NamespacePage{}, mapErr(err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return model.NamespacePage{}, mapErr(err)
	}
	return repo.PageNamespaces(in, all), nil
}
