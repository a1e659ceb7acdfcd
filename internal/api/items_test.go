package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

func mustPutItem(t testing.TB, c *client, path string, body any, headers ...string) model.Item {
	t.Helper()
	var it model.Item
	res := c.do("PUT", "/v1/items/"+path, body, headers...)
	if res.Status != http.StatusCreated && res.Status != http.StatusOK {
		t.Fatalf("PUT %s: %d %s", path, res.Status, res.Body)
	}
	res.want(t, res.Status, &it)
	return it
}

func itemSearch(t testing.TB, c *client, body any, query string) model.Page[model.ItemHit] {
	t.Helper()
	var p model.Page[model.ItemHit]
	c.do("POST", "/v1/items/search"+query, body).want(t, http.StatusOK, &p)
	return p
}

func hitKeys(hits []model.ItemHit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, model.JoinNamespace(h.Namespace)+"/"+h.Key)
	}
	return out
}

func TestItemPutGetDelete(t *testing.T) {
	c := newClient(t)
	created := c.do("PUT", "/v1/items/users.u1.memories/food", `{"value": {"text": "likes ramen", "n": 1}}`)
	var it model.Item
	created.want(t, http.StatusCreated, &it)
	if it.Version != 1 || string(it.Value) != `{"text":"likes ramen","n":1}` || !slices.Equal(it.Namespace, []string{"users", "u1", "memories"}) ||
		it.UserID != nil || it.Index != nil || it.EmbeddingState != nil || it.CreatedAt != it.UpdatedAt {
		t.Fatalf("created %+v", it)
	}
	if got := created.Header.Get("ETag"); got != `"1"` {
		t.Errorf("ETag = %s", got)
	}
	if got := created.Header.Get("Location"); got != "/v1/items/users.u1.memories/food" {
		t.Errorf("Location = %s", got)
	}

	var again model.Item
	c.do("PUT", "/v1/items/users.u1.memories/food", map[string]any{"value": map[string]any{"text": "likes udon"}}).want(t, http.StatusOK, &again)
	if again.Version != 2 || again.CreatedAt != it.CreatedAt || string(again.Value) != `{"text":"likes udon"}` {
		t.Fatalf("replaced %+v", again)
	}
	var got model.Item
	c.do("GET", "/v1/items/users.u1.memories/food", nil).want(t, http.StatusOK, &got)
	if got.Version != 2 || string(got.Value) != `{"text":"likes udon"}` {
		t.Fatalf("read %+v", got)
	}

	t.Run("fences", func(t *testing.T) {
		c.do("PUT", "/v1/items/users.u1.memories/food", map[string]any{"value": map[string]any{}}, "If-Match", `"1"`).
			wantProblem(t, http.StatusPreconditionFailed, "precondition_failed")
		c.do("PUT", "/v1/items/users.u1.memories/food", map[string]any{"value": map[string]any{}}, "If-None-Match", "*").
			wantProblem(t, http.StatusPreconditionFailed, "precondition_failed")
		c.do("PUT", "/v1/items/users.u1.memories/new", map[string]any{"value": map[string]any{}}, "If-Match", "*").
			wantProblem(t, http.StatusPreconditionFailed, "precondition_failed")
		c.do("PUT", "/v1/items/users.u1.memories/food", map[string]any{"value": map[string]any{}}, "If-None-Match", `"2"`).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("DELETE", "/v1/items/users.u1.memories/food", nil, "If-Match", `"7"`).
			wantProblem(t, http.StatusPreconditionFailed, "precondition_failed")
		ok := mustPutItem(t, c, "users.u1.memories/food", map[string]any{"value": map[string]any{"text": "fenced"}}, "If-Match", `"2"`)
		if ok.Version != 3 {
			t.Fatalf("fenced put made version %d", ok.Version)
		}
		created := mustPutItem(t, c, "users.u1.memories/new", map[string]any{"value": map[string]any{}}, "If-None-Match", "*")
		if created.Version != 1 {
			t.Fatalf("If-None-Match put made version %d", created.Version)
		}
	})

	t.Run("delete", func(t *testing.T) {
		c.do("DELETE", "/v1/items/users.u1.memories/new", nil).want(t, http.StatusNoContent, nil)
		c.do("DELETE", "/v1/items/users.u1.memories/new", nil).wantProblem(t, http.StatusNotFound, "not_found")
		c.do("GET", "/v1/items/users.u1.memories/new", nil).wantProblem(t, http.StatusNotFound, "not_found")
		again := mustPutItem(t, c, "users.u1.memories/new", map[string]any{"value": map[string]any{}})
		if again.Version != 1 {
			t.Fatalf("made again at version %d", again.Version)
		}
	})

	t.Run("escaped_key", func(t *testing.T) {
		key := "a/b c?d"
		path := "users.u1.memories/" + url.PathEscape(key)
		res := c.do("PUT", "/v1/items/"+path, map[string]any{"value": map[string]any{"k": key}})
		var it model.Item
		res.want(t, http.StatusCreated, &it)
		if it.Key != key || res.Header.Get("Location") != "/v1/items/"+path {
			t.Fatalf("key %q, Location %q", it.Key, res.Header.Get("Location"))
		}
		var got model.Item
		c.do("GET", "/v1/items/"+path, nil).want(t, http.StatusOK, &got)
		if got.Key != key {
			t.Fatalf("read key %q", got.Key)
		}
	})
}

func TestItemValidation(t *testing.T) {
	c := newClient(t)
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'x'
	}
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code, field        string
	}{
		{"value_required", "PUT", "/v1/items/a/k", map[string]any{}, 422, "validation_failed", "value"},
		{"value_not_object", "PUT", "/v1/items/a/k", map[string]any{"value": []int{1}}, 422, "validation_failed", "value"},
		{"unknown_field", "PUT", "/v1/items/a/k", map[string]any{"value": map[string]any{}, "vale": 1}, 422, "validation_failed", "vale"},
		{"empty_label", "PUT", "/v1/items/a..b/k", map[string]any{"value": map[string]any{}}, 422, "validation_failed", "namespace[1]"},
		{"wildcard_label", "PUT", "/v1/items/a.*/k", map[string]any{"value": map[string]any{}}, 422, "validation_failed", "namespace[1]"},
		{"long_label", "PUT", "/v1/items/" + string(long) + "/k", map[string]any{"value": map[string]any{}}, 422, "validation_failed", "namespace[0]"},
		{"deep", "PUT", "/v1/items/a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q/k", map[string]any{"value": map[string]any{}}, 422, "validation_failed", "namespace"},
		{"ttl_and_expires", "PUT", "/v1/items/a/k", map[string]any{"value": map[string]any{}, "ttl_seconds": 5, "expires_at": "2030-01-01T00:00:00Z"}, 422, "validation_failed", "expires_at"},
		{"bad_ttl", "PUT", "/v1/items/a/k", map[string]any{"value": map[string]any{}, "ttl_seconds": 0}, 422, "validation_failed", "ttl_seconds"},
		{"index_true", "PUT", "/v1/items/a/k", map[string]any{"value": map[string]any{}, "index": true}, 422, "validation_failed", "index"},
		{"index_bad_path", "PUT", "/v1/items/a/k", map[string]any{"value": map[string]any{}, "index": []string{"a[0"}}, 422, "validation_failed", "index[0]"},
		{"filter_object_value", "POST", "/v1/items/search", map[string]any{"filter": map[string]any{"a": map[string]any{"b": 1}}}, 422, "validation_failed", "filter.a.b"},
		{"filter_bad_gt", "POST", "/v1/items/search", map[string]any{"filter": map[string]any{"a": map[string]any{"$gt": true}}}, 422, "validation_failed", "filter.a.$gt"},
		{"filter_list", "POST", "/v1/items/search", map[string]any{"filter": map[string]any{"a": []int{1}}}, 422, "validation_failed", "filter.a"},
		{"search_limit", "POST", "/v1/items/search", map[string]any{"limit": 201}, 422, "validation_failed", "limit"},
		{"search_offset", "POST", "/v1/items/search", map[string]any{"offset": 10001}, 422, "validation_failed", "offset"},
		{"namespaces_limit", "GET", "/v1/items/namespaces?limit=1001", nil, 400, "invalid_query", "limit"},
		{"search_cursor_and_offset", "POST", "/v1/items/search", map[string]any{"cursor": "x", "offset": 1}, 422, "validation_failed", "cursor"},
		{"query_without_endpoint", "POST", "/v1/items/search", map[string]any{"query": "food"}, 422, "validation_failed", "query"},
		{"bad_cursor", "POST", "/v1/items/search", map[string]any{"cursor": "nope"}, 400, "invalid_cursor", "cursor"},
		{"namespaces_depth", "GET", "/v1/items/namespaces?max_depth=17", nil, 400, "invalid_query", "max_depth"},
		{"namespaces_unknown", "GET", "/v1/items/namespaces?depth=1", nil, 400, "invalid_query", "depth"},
		{"batch_empty", "POST", "/v1/items/batch", map[string]any{"ops": []any{}}, 422, "validation_failed", "ops"},
		{"batch_bad_op", "POST", "/v1/items/batch", map[string]any{"ops": []any{map[string]any{"op": "upsert"}}}, 422, "validation_failed", "ops[0].op"},
		{"batch_field_of_other_op", "POST", "/v1/items/batch", map[string]any{"ops": []any{map[string]any{"op": "get", "namespace": []string{"a"}, "key": "k", "value": map[string]any{}}}}, 422, "validation_failed", "ops[0].value"},
		{"batch_put_key", "POST", "/v1/items/batch", map[string]any{"ops": []any{map[string]any{"op": "put", "namespace": []string{"a"}, "key": "..", "value": map[string]any{}}}}, 422, "validation_failed", "ops[0].key"},
		{"batch_put_value", "POST", "/v1/items/batch", map[string]any{"ops": []any{map[string]any{"op": "get", "namespace": []string{"a"}, "key": "k"}, map[string]any{"op": "put", "namespace": []string{"a"}, "key": "k"}}}, 422, "validation_failed", "ops[1].value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := c.do(tc.method, tc.path, tc.body).wantProblem(t, tc.status, tc.code)
			if !slices.ContainsFunc(p.Errors, func(f model.FieldError) bool { return f.Field == tc.field }) {
				t.Fatalf("errors %+v do not name %s", p.Errors, tc.field)
			}
		})
	}
	t.Run("batch_of_101", func(t *testing.T) {
		ops := make([]any, 101)
		for i := range ops {
			ops[i] = map[string]any{"op": "get", "namespace": []string{"a"}, "key": "k"}
		}
		c.do("POST", "/v1/items/batch", map[string]any{"ops": ops}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	})
	t.Run("value_over_64_KiB", func(t *testing.T) {
		big := make([]byte, 70<<10)
		for i := range big {
			big[i] = 'x'
		}
		c.do("PUT", "/v1/items/a/k", map[string]any{"value": map[string]any{"t": string(big)}}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		c.do("GET", "/v1/items/a/k", nil).wantProblem(t, http.StatusNotFound, "not_found")
	})
}

func TestItemSearchFilters(t *testing.T) {
	c := newClient(t)
	items := []struct {
		path  string
		value map[string]any
	}{
		{"docs.a/1", map[string]any{"kind": "note", "stars": 1, "done": false}},
		{"docs.a/2", map[string]any{"kind": "note", "stars": 3.5, "done": true}},
		{"docs.a/3", map[string]any{"kind": "todo", "stars": 5, "tag": nil}},
		{"docs.b/1", map[string]any{"kind": "note", "stars": "many"}},
		{"docs.b.c/1", map[string]any{"kind": "todo", "weird key": "x"}},
		{"docsx/1", map[string]any{"kind": "note"}},
		{"other/1", map[string]any{"kind": "note"}},
	}
	for _, it := range items {
		mustPutItem(t, c, it.path, map[string]any{"value": it.value})
	}
	cases := []struct {
		name   string
		prefix []string
		filter map[string]any
		want   []string
	}{
		{"prefix", []string{"docs"}, nil, []string{"docs.a/1", "docs.a/2", "docs.a/3", "docs.b/1", "docs.b.c/1"}},
		{"prefix_exact_namespace", []string{"docs", "b"}, nil, []string{"docs.b/1", "docs.b.c/1"}},
		{"everything", nil, nil, []string{"docs.a/1", "docs.a/2", "docs.a/3", "docs.b/1", "docs.b.c/1", "docsx/1", "other/1"}},
		{"eq", []string{"docs"}, map[string]any{"kind": "todo"}, []string{"docs.a/3", "docs.b.c/1"}},
		{"eq_op", []string{"docs"}, map[string]any{"kind": map[string]any{"$eq": "todo"}}, []string{"docs.a/3", "docs.b.c/1"}},
		{"ne_matches_missing", []string{"docs", "a"}, map[string]any{"tag": map[string]any{"$ne": nil}}, []string{"docs.a/1", "docs.a/2"}},
		{"null", nil, map[string]any{"tag": nil}, []string{"docs.a/3"}},
		{"bool", nil, map[string]any{"done": true}, []string{"docs.a/2"}},
		{"gte_number", nil, map[string]any{"stars": map[string]any{"$gte": 3}}, []string{"docs.a/2", "docs.a/3"}},
		{"range", nil, map[string]any{"stars": map[string]any{"$gt": 1, "$lt": 5}}, []string{"docs.a/2"}},
		{"number_equals_float", nil, map[string]any{"stars": 5.0}, []string{"docs.a/3"}},
		{"string_compare", nil, map[string]any{"stars": map[string]any{"$gt": "a"}}, []string{"docs.b/1"}},
		{"in", nil, map[string]any{"stars": map[string]any{"$in": []any{1, "many"}}}, []string{"docs.a/1", "docs.b/1"}},
		{"nin", []string{"docs"}, map[string]any{"stars": map[string]any{"$nin": []any{1, "many"}}}, []string{"docs.a/2", "docs.a/3", "docs.b.c/1"}},
		{"odd_field_name", nil, map[string]any{"weird key": "x"}, []string{"docs.b.c/1"}},
		{"two_fields", nil, map[string]any{"kind": "note", "done": false}, []string{"docs.a/1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"limit": 50}
			if tc.prefix != nil {
				body["namespace_prefix"] = tc.prefix
			}
			if tc.filter != nil {
				body["filter"] = tc.filter
			}
			got := hitKeys(itemSearch(t, c, body, "").Data)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("keyset_pages", func(t *testing.T) {
		var got []string
		body := map[string]any{"namespace_prefix": []string{"docs"}, "limit": 2}
		for {
			p := itemSearch(t, c, body, "")
			got = append(got, hitKeys(p.Data)...)
			for _, h := range p.Data {
				if h.Score != nil {
					t.Fatalf("score %v without a query", *h.Score)
				}
			}
			if !p.HasMore {
				break
			}
			body["cursor"] = *p.NextCursor
		}
		want := []string{"docs.a/1", "docs.a/2", "docs.a/3", "docs.b/1", "docs.b.c/1"}
		if !slices.Equal(got, want) {
			t.Fatalf("pages %v, want %v", got, want)
		}
		first := itemSearch(t, c, map[string]any{"namespace_prefix": []string{"docs"}, "limit": 2}, "")
		c.do("POST", "/v1/items/search", map[string]any{"namespace_prefix": []string{"other"}, "cursor": *first.NextCursor}).
			wantProblem(t, http.StatusBadRequest, "invalid_cursor")
	})
	t.Run("offset", func(t *testing.T) {
		p := itemSearch(t, c, map[string]any{"namespace_prefix": []string{"docs"}, "limit": 2, "offset": 3}, "")
		if got := hitKeys(p.Data); !slices.Equal(got, []string{"docs.b/1", "docs.b.c/1"}) || p.HasMore {
			t.Fatalf("offset page %v (more %v)", got, p.HasMore)
		}
	})
}

func TestItemNamespaces(t *testing.T) {
	c := newClient(t)
	for _, ns := range []string{"a.b.c", "a.b.d", "a.x", "b", "b.b.c", "c.d"} {
		mustPutItem(t, c, ns+"/k", map[string]any{"value": map[string]any{}})
	}
	mustPutItem(t, c, "hidden.ns/k?user_id=u1", map[string]any{"value": map[string]any{}})
	cases := []struct {
		query string
		want  [][]string
		more  bool
	}{
		{"", [][]string{{"a", "b", "c"}, {"a", "b", "d"}, {"a", "x"}, {"b"}, {"b", "b", "c"}, {"c", "d"}}, false},
		{"prefix=a", [][]string{{"a", "b", "c"}, {"a", "b", "d"}, {"a", "x"}}, false},
		{"prefix=*.b", [][]string{{"a", "b", "c"}, {"a", "b", "d"}, {"b", "b", "c"}}, false},
		{"suffix=c", [][]string{{"a", "b", "c"}, {"b", "b", "c"}}, false},
		{"prefix=a&suffix=*.d", [][]string{{"a", "b", "d"}}, false},
		{"max_depth=1", [][]string{{"a"}, {"b"}, {"c"}}, false},
		{"max_depth=2&prefix=a", [][]string{{"a", "b"}, {"a", "x"}}, false},
		{"limit=2&offset=1", [][]string{{"a", "b", "d"}, {"a", "x"}}, true},
		{"user_id=u1", [][]string{{"hidden", "ns"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			var p model.NamespacePage
			c.do("GET", "/v1/items/namespaces?"+tc.query, nil).want(t, http.StatusOK, &p)
			if !slices.EqualFunc(p.Data, tc.want, slices.Equal[[]string]) || p.HasMore != tc.more {
				t.Fatalf("got %v (more %v), want %v (more %v)", p.Data, p.HasMore, tc.want, tc.more)
			}
		})
	}
}

func TestItemBatch(t *testing.T) {
	c := newClient(t)
	mustPutItem(t, c, "m/a", map[string]any{"value": map[string]any{"v": 1}})
	ns := []string{"m"}
	var res model.ItemBatchResult
	c.do("POST", "/v1/items/batch", map[string]any{"ops": []any{
		map[string]any{"op": "get", "namespace": ns, "key": "a"},
		map[string]any{"op": "put", "namespace": ns, "key": "a", "value": map[string]any{"v": 2}},
		map[string]any{"op": "get", "namespace": ns, "key": "b"},
		map[string]any{"op": "put", "namespace": ns, "key": "b", "value": map[string]any{"v": 3}, "if_version": 0},
		map[string]any{"op": "search", "namespace_prefix": ns},
		map[string]any{"op": "list_namespaces"},
		map[string]any{"op": "delete", "namespace": ns, "key": "zzz"},
	}}).want(t, http.StatusOK, &res)
	r := res.Results
	if len(r) != 7 {
		t.Fatalf("%d results", len(r))
	}
	// Reads see the items as they were before the batch; writes follow.
	if r[0].Item == nil || string(r[0].Item.Value) != `{"v":1}` || r[2].Item != nil {
		t.Fatalf("gets %+v %+v", r[0].Item, r[2].Item)
	}
	if r[1].Item == nil || r[1].Item.Version != 2 || r[3].Item == nil || r[3].Item.Version != 1 {
		t.Fatalf("puts %+v %+v", r[1].Item, r[3].Item)
	}
	if got := hitKeys(r[4].Hits.Data); !slices.Equal(got, []string{"m/a"}) || string(r[4].Hits.Data[0].Value) != `{"v":1}` {
		t.Fatalf("search %v", got)
	}
	if !slices.EqualFunc(r[5].Namespaces.Data, [][]string{{"m"}}, slices.Equal[[]string]) || r[6].Deleted {
		t.Fatalf("list %v, deleted %v", r[5].Namespaces.Data, r[6].Deleted)
	}

	t.Run("all_or_nothing", func(t *testing.T) {
		p := c.do("POST", "/v1/items/batch", map[string]any{"ops": []any{
			map[string]any{"op": "put", "namespace": ns, "key": "c", "value": map[string]any{}},
			map[string]any{"op": "delete", "namespace": ns, "key": "a"},
			map[string]any{"op": "put", "namespace": ns, "key": "b", "value": map[string]any{}, "if_version": 7},
		}}).wantProblem(t, http.StatusPreconditionFailed, "precondition_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "ops[2].if_version" {
			t.Fatalf("errors %+v", p.Errors)
		}
		c.do("GET", "/v1/items/m/c", nil).wantProblem(t, http.StatusNotFound, "not_found")
		c.do("GET", "/v1/items/m/a", nil).want(t, http.StatusOK, nil)
	})

	t.Run("read_scope", func(t *testing.T) {
		admin := mustKey(t, c, "default", model.ScopeAdmin)
		read := mustKey(t, c, "default", model.ScopeRead)
		_ = admin
		rc := c.as(read.Key)
		rc.do("POST", "/v1/items/batch", map[string]any{"ops": []any{map[string]any{"op": "get", "namespace": ns, "key": "a"}}}).
			want(t, http.StatusOK, nil)
		rc.do("POST", "/v1/items/batch", map[string]any{"ops": []any{map[string]any{"op": "delete", "namespace": ns, "key": "a"}}}).
			wantProblem(t, http.StatusForbidden, "forbidden")
		rc.do("GET", "/v1/items/m/a?refresh_ttl=true", nil).wantProblem(t, http.StatusForbidden, "forbidden")
		rc.do("PUT", "/v1/items/m/a", map[string]any{"value": map[string]any{}}).wantProblem(t, http.StatusForbidden, "forbidden")
	})
}

func TestItemUserSpaces(t *testing.T) {
	c := newClient(t)
	admin := mustKey(t, c, "t1", model.ScopeAdmin)
	ac := c.as(admin.Key)
	var bound model.NewAPIKey
	u := "ada"
	ac.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "user_id": u}).want(t, http.StatusCreated, &bound)
	bc := c.as(bound.Key)

	mustPutItem(t, ac, "prefs/theme", map[string]any{"value": map[string]any{"v": "shared"}})
	mustPutItem(t, ac, "prefs/theme?user_id=ada", map[string]any{"value": map[string]any{"v": "ada's"}})
	mustPutItem(t, ac, "prefs/theme?user_id=bob", map[string]any{"value": map[string]any{"v": "bob's"}})

	var got model.Item
	bc.do("GET", "/v1/items/prefs/theme", nil).want(t, http.StatusOK, &got)
	if string(got.Value) != `{"v":"ada's"}` || got.UserID == nil || *got.UserID != u {
		t.Fatalf("bound key read %s (user %v)", got.Value, got.UserID)
	}
	bc.do("GET", "/v1/items/prefs/theme?user_id=bob", nil).wantProblem(t, http.StatusForbidden, "forbidden")
	bc.do("POST", "/v1/items/batch?user_id=bob", map[string]any{"ops": []any{map[string]any{"op": "get", "namespace": []string{"prefs"}, "key": "theme"}}}).
		wantProblem(t, http.StatusForbidden, "forbidden")
	mine := mustPutItem(t, bc, "prefs/font", map[string]any{"value": map[string]any{"v": "serif"}})
	if mine.UserID == nil || *mine.UserID != u {
		t.Fatalf("bound key's put went to user %v", mine.UserID)
	}
	c.do("GET", "/v1/items/prefs/font", nil).wantProblem(t, http.StatusUnauthorized, "unauthorized")
	ac.do("GET", "/v1/items/prefs/font", nil).wantProblem(t, http.StatusNotFound, "not_found")
	ac.do("GET", "/v1/items/prefs/font?user_id=ada", nil).want(t, http.StatusOK, nil)
	p := itemSearch(t, bc, map[string]any{}, "")
	if got := hitKeys(p.Data); !slices.Equal(got, []string{"prefs/font", "prefs/theme"}) {
		t.Fatalf("bound key's search %v", got)
	}
	p = itemSearch(t, ac, map[string]any{}, "")
	if len(p.Data) != 1 || string(p.Data[0].Value) != `{"v":"shared"}` {
		t.Fatalf("shared search %v", hitKeys(p.Data))
	}
	// Another tenant sees none of it.
	other := mustKey(t, c, "t2", model.ScopeAdmin)
	c.as(other.Key).do("GET", "/v1/items/prefs/theme", nil).wantProblem(t, http.StatusNotFound, "not_found")
}

func TestItemTTL(t *testing.T) {
	c := newClient(t)
	it := mustPutItem(t, c, "s/k", map[string]any{"value": map[string]any{}, "ttl_seconds": 3600})
	if it.ExpiresAt == nil || it.TTLSeconds == nil || *it.TTLSeconds != 3600 || *it.ExpiresAt != it.UpdatedAt+3600_000 {
		t.Fatalf("ttl item %+v", it)
	}
	var plain, refreshed model.Item
	c.do("GET", "/v1/items/s/k", nil).want(t, http.StatusOK, &plain)
	if *plain.ExpiresAt != *it.ExpiresAt {
		t.Fatalf("a plain read moved expires_at")
	}
	waitPast(t, *it.ExpiresAt-3600_000)
	c.do("GET", "/v1/items/s/k?refresh_ttl=true", nil).want(t, http.StatusOK, &refreshed)
	if *refreshed.ExpiresAt <= *it.ExpiresAt || refreshed.Version != it.Version {
		t.Fatalf("refresh: expires %v (was %v), version %d", refreshed.ExpiresAt, it.ExpiresAt, refreshed.Version)
	}
	p := itemSearch(t, c, map[string]any{"refresh_ttl": true}, "")
	if len(p.Data) != 1 || *p.Data[0].ExpiresAt < *refreshed.ExpiresAt {
		t.Fatalf("search refresh %+v", p.Data)
	}

	past := model.Now() - 1000
	gone := mustPutItem(t, c, "s/gone", map[string]any{"value": map[string]any{}, "expires_at": past.String()})
	if gone.ExpiresAt == nil || *gone.ExpiresAt != past {
		t.Fatalf("expires_at %v", gone.ExpiresAt)
	}
	c.do("GET", "/v1/items/s/gone", nil).wantProblem(t, http.StatusNotFound, "not_found")
	if p := itemSearch(t, c, map[string]any{}, ""); len(p.Data) != 1 {
		t.Fatalf("search found expired: %v", hitKeys(p.Data))
	}
	// A put over an expired item makes a new one.
	fresh := mustPutItem(t, c, "s/gone", map[string]any{"value": map[string]any{}}, "If-None-Match", "*")
	if fresh.Version != 1 || fresh.ExpiresAt != nil {
		t.Fatalf("put over expired %+v", fresh)
	}
	mustPutItem(t, c, "s/gone2", map[string]any{"value": map[string]any{}, "expires_at": past.String()})
	var res model.PurgeResult
	c.do("POST", "/v1/admin/purge", map[string]any{"expired": true}).want(t, http.StatusOK, &res)
	if res.Items != 1 {
		t.Fatalf("purge erased %d items, want 1", res.Items)
	}
}

// waitPast waits until the clock is past t, so that a later write is at a
// later millisecond.
func waitPast(t testing.TB, at model.Time) {
	t.Helper()
	for model.Now() <= at+1 {
		time.Sleep(time.Millisecond)
	}
}
