package model

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Operations of an item batch (POST /v1/items/batch), LangGraph's.
const (
	ItemGet            = "get"
	ItemPut            = "put"
	ItemDelete         = "delete"
	ItemSearchOp       = "search"
	ItemListNamespaces = "list_namespaces"
)

// DefaultItemSearchLimit is LangGraph's search default.
const DefaultItemSearchLimit = 10

// ItemWrite is one write of WriteItems: a put, a delete, or a touch (the
// refresh of a TTL that a read asked for, at At).
type ItemWrite struct {
	Ref    ItemRef
	Delete bool
	Touch  bool
	At     Time
	Put    PutItem
	Fence  ItemFence
}

// ItemWritten is a write's outcome: the item a put stored, or whether a
// delete found one to delete.
type ItemWritten struct {
	Item    Item
	Created bool
	Deleted bool
}

// SearchItems is the body of POST /v1/items/search and a batch's search.
type SearchItems struct {
	NamespacePrefix []string `json:"namespace_prefix,omitempty"`
	Filter          Object   `json:"filter,omitempty"`
	Query           string   `json:"query,omitempty"`
	Limit           int      `json:"limit,omitempty"`
	Offset          int      `json:"offset,omitempty"`
	Cursor          string   `json:"cursor,omitempty"`
	RefreshTTL      bool     `json:"refresh_ttl,omitempty"`
}

// Validate checks the search as a request body.
func (b SearchItems) Validate() error {
	_, err := b.Compile("")
	return err
}

// Compile validates the search, naming fields under prefix, and returns it
// as the store runs it.
func (b SearchItems) Compile(prefix string) (ItemSearch, error) {
	s := ItemSearch{Prefix: b.NamespacePrefix, Query: strings.TrimSpace(b.Query), Limit: b.Limit, Offset: b.Offset,
		Cursor: b.Cursor, RefreshTTL: b.RefreshTTL}
	if s.Prefix == nil {
		s.Prefix = []string{}
	}
	if err := CheckNamespace(prefix+"namespace_prefix", s.Prefix, true); err != nil {
		return s, err
	}
	var fields []FieldError
	switch {
	case b.Limit == 0:
		s.Limit = DefaultItemSearchLimit
	case b.Limit < 1 || b.Limit > MaxLimit:
		fields = append(fields, FieldError{Field: prefix + "limit", Message: "must be from 1 to " + strconv.Itoa(MaxLimit)})
	}
	if b.Offset < 0 || b.Offset > MaxItemOffset {
		fields = append(fields, FieldError{Field: prefix + "offset", Message: "must be from 0 to " + strconv.Itoa(MaxItemOffset)})
	}
	if b.Cursor != "" && b.Offset != 0 {
		fields = append(fields, FieldError{Field: prefix + "cursor", Message: "is not allowed with offset"})
	}
	if b.Cursor != "" && s.Query != "" {
		fields = append(fields, FieldError{Field: prefix + "cursor", Message: "is not allowed with query: a search by meaning pages by offset"})
	}
	if utf8.RuneCountInString(b.Query) > MaxItemQueryChars {
		fields = append(fields, FieldError{Field: prefix + "query", Message: "must be at most " + strconv.Itoa(MaxItemQueryChars) + " characters long"})
	}
	if fields != nil {
		return s, Invalid(fields...)
	}
	var err error
	s.Filter, err = ParseItemFilter(prefix+"filter", b.Filter)
	return s, err
}

// ListNamespaces is a batch's namespace listing (GET /v1/items/namespaces
// takes the same as query parameters).
type ListNamespaces struct {
	Prefix   []string `json:"prefix,omitempty"`
	Suffix   []string `json:"suffix,omitempty"`
	MaxDepth int      `json:"max_depth,omitempty"`
	Limit    int      `json:"limit,omitempty"`
	Offset   int      `json:"offset,omitempty"`
}

// Compile validates the listing, naming fields under prefix.
func (b ListNamespaces) Compile(prefix string) (NamespaceQuery, error) {
	q := NamespaceQuery(b)
	if err := CheckPattern(prefix+"prefix", q.Prefix); err != nil {
		return q, err
	}
	if err := CheckPattern(prefix+"suffix", q.Suffix); err != nil {
		return q, err
	}
	var fields []FieldError
	if b.MaxDepth < 0 || b.MaxDepth > MaxNamespaceDepth {
		fields = append(fields, FieldError{Field: prefix + "max_depth", Message: "must be from 1 to " + strconv.Itoa(MaxNamespaceDepth)})
	}
	switch {
	case b.Limit == 0:
		q.Limit = DefaultNamespaceLimit
	case b.Limit < 1 || b.Limit > MaxNamespaceLimit:
		fields = append(fields, FieldError{Field: prefix + "limit", Message: "must be from 1 to " + strconv.Itoa(MaxNamespaceLimit)})
	}
	if b.Offset < 0 || b.Offset > MaxItemOffset {
		fields = append(fields, FieldError{Field: prefix + "offset", Message: "must be from 0 to " + strconv.Itoa(MaxItemOffset)})
	}
	if fields != nil {
		return q, Invalid(fields...)
	}
	return q, nil
}

// ItemOp is one operation of a batch: op says which, and which of the other
// fields it takes (get: namespace, key, refresh_ttl; put: namespace, key,
// value, index, ttl_seconds, expires_at, if_version; delete: namespace, key,
// if_version; search: SearchItems's; list_namespaces: ListNamespaces's).
type ItemOp struct {
	Op         string     `json:"op"`
	Namespace  []string   `json:"namespace,omitempty"`
	Key        string     `json:"key,omitempty"`
	Value      Object     `json:"value,omitempty"`
	Index      *ItemIndex `json:"index,omitempty"`
	TTLSeconds *int64     `json:"ttl_seconds,omitempty"`
	ExpiresAt  *Time      `json:"expires_at,omitempty"`
	// IfVersion fences a put or delete: the item must be at that version,
	// or, for 0, not exist.
	IfVersion  *int64 `json:"if_version,omitempty"`
	RefreshTTL bool   `json:"refresh_ttl,omitempty"`

	NamespacePrefix []string `json:"namespace_prefix,omitempty"`
	Filter          Object   `json:"filter,omitempty"`
	Query           string   `json:"query,omitempty"`
	Limit           int      `json:"limit,omitempty"`
	Offset          int      `json:"offset,omitempty"`
	Cursor          string   `json:"cursor,omitempty"`

	Prefix   []string `json:"prefix,omitempty"`
	Suffix   []string `json:"suffix,omitempty"`
	MaxDepth int      `json:"max_depth,omitempty"`
}

// ItemBatch is the body of POST /v1/items/batch.
type ItemBatch struct {
	Ops []ItemOp `json:"ops"`
}

// ItemRequest is a batch operation as the store runs it.
type ItemRequest struct {
	Op         string
	Ref        ItemRef
	Put        PutItem
	Fence      ItemFence
	RefreshTTL bool
	Search     ItemSearch
	List       NamespaceQuery
}

// Writes reports whether the operation writes (a read that refreshes a TTL
// does too): a key with read scope may not send it.
func (r ItemRequest) Writes() bool {
	return r.Op == ItemPut || r.Op == ItemDelete || r.RefreshTTL || r.Search.RefreshTTL
}

// Validate checks the batch.
func (b ItemBatch) Validate() error {
	_, err := b.Compile()
	return err
}

// Compile validates every operation, naming fields as ops[i].field, and
// returns them as the store runs them.
func (b ItemBatch) Compile() ([]ItemRequest, error) {
	if len(b.Ops) == 0 || len(b.Ops) > MaxItemBatch {
		return nil, Invalid(FieldError{Field: "ops", Message: "must have 1 to " + strconv.Itoa(MaxItemBatch) + " operations"})
	}
	out := make([]ItemRequest, len(b.Ops))
	for i, op := range b.Ops {
		r, err := op.compile("ops[" + strconv.Itoa(i) + "].")
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func (op ItemOp) compile(prefix string) (ItemRequest, error) {
	r := ItemRequest{Op: op.Op, Ref: ItemRef{Namespace: op.Namespace, Key: op.Key}, RefreshTTL: op.RefreshTTL}
	given := op.given()
	allowed := map[string][]string{
		ItemGet:            {"namespace", "key", "refresh_ttl"},
		ItemPut:            {"namespace", "key", "value", "index", "ttl_seconds", "expires_at", "if_version"},
		ItemDelete:         {"namespace", "key", "if_version"},
		ItemSearchOp:       {"namespace_prefix", "filter", "query", "limit", "offset", "cursor", "refresh_ttl"},
		ItemListNamespaces: {"prefix", "suffix", "max_depth", "limit", "offset"},
	}[op.Op]
	if allowed == nil {
		return r, Invalid(FieldError{Field: prefix + "op", Message: "must be one of: get, put, delete, search, list_namespaces"})
	}
	for _, f := range given {
		if !contains(allowed, f) {
			return r, Invalid(FieldError{Field: prefix + f, Message: "is not allowed with op " + op.Op})
		}
	}
	switch op.Op {
	case ItemGet, ItemPut, ItemDelete:
		if err := r.Ref.Check(prefix+"namespace", prefix+"key"); err != nil {
			return r, err
		}
		if op.IfVersion != nil {
			if *op.IfVersion < 0 {
				return r, Invalid(FieldError{Field: prefix + "if_version", Message: "must be 0 (the item must not exist) or a version"})
			}
			r.Fence = ItemFence{Absent: *op.IfVersion == 0, Version: *op.IfVersion}
		}
	}
	var err error
	switch op.Op {
	case ItemPut:
		r.Put = PutItem{Value: op.Value, Index: op.Index, TTLSeconds: op.TTLSeconds, ExpiresAt: op.ExpiresAt}
		err = r.Put.check(prefix)
	case ItemSearchOp:
		r.Search, err = SearchItems{NamespacePrefix: op.NamespacePrefix, Filter: op.Filter, Query: op.Query, Limit: op.Limit,
			Offset: op.Offset, Cursor: op.Cursor, RefreshTTL: op.RefreshTTL}.Compile(prefix)
		r.RefreshTTL = false
	case ItemListNamespaces:
		r.List, err = ListNamespaces{Prefix: op.Prefix, Suffix: op.Suffix, MaxDepth: op.MaxDepth, Limit: op.Limit,
			Offset: op.Offset}.Compile(prefix)
	}
	return r, err
}

// given names the fields the operation set beside op.
func (op ItemOp) given() []string {
	var out []string
	add := func(name string, set bool) {
		if set {
			out = append(out, name)
		}
	}
	add("namespace", op.Namespace != nil)
	add("key", op.Key != "")
	add("value", op.Value != nil)
	add("index", op.Index != nil)
	add("ttl_seconds", op.TTLSeconds != nil)
	add("expires_at", op.ExpiresAt != nil)
	add("if_version", op.IfVersion != nil)
	add("refresh_ttl", op.RefreshTTL)
	add("namespace_prefix", op.NamespacePrefix != nil)
	add("filter", op.Filter != nil)
	add("query", op.Query != "")
	add("limit", op.Limit != 0)
	add("offset", op.Offset != 0)
	add("cursor", op.Cursor != "")
	add("prefix", op.Prefix != nil)
	add("suffix", op.Suffix != nil)
	add("max_depth", op.MaxDepth != 0)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ItemResult is one operation's answer, in the batch's order: get's item
// (null when there is none), put's stored item, delete's deleted, search's
// items (with has_more and next_cursor), list_namespaces's namespaces (with
// has_more).
type ItemResult struct {
	Op         string
	Item       *Item
	Deleted    bool
	Hits       Page[ItemHit]
	Namespaces NamespacePage
}

// MarshalJSON writes the fields of the result's op only.
func (r ItemResult) MarshalJSON() ([]byte, error) {
	switch r.Op {
	case ItemGet, ItemPut:
		return json.Marshal(struct {
			Op   string `json:"op"`
			Item *Item  `json:"item"`
		}{r.Op, r.Item})
	case ItemDelete:
		return json.Marshal(struct {
			Op      string `json:"op"`
			Deleted bool   `json:"deleted"`
		}{r.Op, r.Deleted})
	case ItemSearchOp:
		return json.Marshal(struct {
			Op         string    `json:"op"`
			Items      []ItemHit `json:"items"`
			HasMore    bool      `json:"has_more"`
			NextCursor *string   `json:"next_cursor"`
		}{r.Op, r.Hits.Data, r.Hits.HasMore, r.Hits.NextCursor})
	}
	return json.Marshal(struct {
		Op         string     `json:"op"`
		Namespaces [][]string `json:"namespaces"`
		HasMore    bool       `json:"has_more"`
	}{r.Op, r.Namespaces.Data, r.Namespaces.HasMore})
}

// UnmarshalJSON reads what MarshalJSON wrote (clients, tests).
func (r *ItemResult) UnmarshalJSON(b []byte) error {
	var v struct {
		Op         string     `json:"op"`
		Item       *Item      `json:"item"`
		Deleted    bool       `json:"deleted"`
		Items      []ItemHit  `json:"items"`
		HasMore    bool       `json:"has_more"`
		NextCursor *string    `json:"next_cursor"`
		Namespaces [][]string `json:"namespaces"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = ItemResult{Op: v.Op, Item: v.Item, Deleted: v.Deleted,
		Hits:       Page[ItemHit]{Data: v.Items, HasMore: v.HasMore, NextCursor: v.NextCursor},
		Namespaces: NamespacePage{Data: v.Namespaces, HasMore: v.HasMore}}
	return nil
}

// ItemBatchResult is the answer of POST /v1/items/batch.
type ItemBatchResult struct {
	Results []ItemResult `json:"results"`
}
