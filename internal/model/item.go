package model

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Item is one entry of the item store: a JSON object kept under a namespace
// (a path of labels) and a key, in the tenant's shared space or one end
// user's (UserID). It is what LangGraph's BaseStore, Google ADK's app: and
// user: state and mem0-style memories keep: upserted whole, read by key,
// found by filters on its value or by meaning.
type Item struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
	Value     Object   `json:"value"`
	// UserID is the end user whose item it is; nil: the tenant's shared space.
	UserID *string `json:"user_id"`
	// Version is 1 when the item is made and grows by one with each put: the
	// fence a put or delete may name (If-Match).
	Version int64 `json:"version"`
	// Index is the value's paths whose text is embedded for search by
	// meaning; nil: none.
	Index []string `json:"index"`
	// EmbeddingState is null when nothing of the item is embedded or coming;
	// pending while the server embeds its texts, ready once every one is,
	// failed when one could not be (EmbeddingError says why).
	EmbeddingState *string `json:"embedding_state"`
	EmbeddingError *string `json:"embedding_error"`
	CreatedAt      Time    `json:"created_at"`
	UpdatedAt      Time    `json:"updated_at"`
	// ExpiresAt is when the item stops being found (and the expiry sweep
	// erases it); TTLSeconds, when set, is how far a read that asks to
	// refresh it moves ExpiresAt ahead of now.
	ExpiresAt  *Time  `json:"expires_at"`
	TTLSeconds *int64 `json:"ttl_seconds"`
}

// ItemHit is a search result: the item and, for a search by meaning, its
// score, the cosine similarity of the query with the closest of the item's
// embedded texts (higher is better, as LangGraph's); null for an item found
// without one (no query, or none of its texts embedded yet).
type ItemHit struct {
	Item
	Score *float64 `json:"score"`
}

// Bounds of the item store. A namespace is at most MaxNamespaceDepth labels
// of at most MaxLabelChars characters; a value is a metadata-sized object
// (MaxObjectBytes); a batch at most MaxItemBatch operations.
const (
	MaxNamespaceDepth = 16
	MaxLabelChars     = 128
	MaxItemKeyChars   = 512
	MaxItemBatch      = 100
	MaxItemIndexPaths = 16
	MaxItemPathChars  = 256
	// MaxItemTexts bounds how many texts one item's index paths may pick
	// (a path through an array picks one per element): each is embedded.
	MaxItemTexts      = 64
	MaxItemFilters    = 32
	MaxItemOffset     = 10_000
	MaxItemQueryChars = 10_000
	MaxTTLSeconds     = 10 * 365 * 24 * 3600
	// DefaultNamespaceLimit is LangGraph's listNamespaces default.
	DefaultNamespaceLimit = 100
	MaxNamespaceLimit     = 1000
)

// NamespaceSep joins a namespace's labels where one string stands for it: in
// a URL path (users.u1.memories) and in the database. Labels never hold it.
const NamespaceSep = "."

// NamespaceWildcard matches any one label in a namespace listing's prefix or
// suffix; no label may be it.
const NamespaceWildcard = "*"

// CheckLabel says what is wrong with a namespace label ("" when nothing):
// 1 to MaxLabelChars characters, no NamespaceSep (it joins labels), not the
// wildcard, no control characters.
func CheckLabel(l string) string {
	switch n := utf8.RuneCountInString(l); {
	case n == 0 || n > MaxLabelChars:
		return "must be 1 to " + strconv.Itoa(MaxLabelChars) + " characters long"
	case !utf8.ValidString(l):
		return "must be valid UTF-8"
	case strings.Contains(l, NamespaceSep):
		return "must not contain '" + NamespaceSep + "' (it joins a namespace's labels)"
	case l == NamespaceWildcard:
		return "must not be '*' (it matches any label in a namespace listing)"
	case strings.IndexFunc(l, unicode.IsControl) >= 0:
		return "must not contain control characters"
	}
	return ""
}

// CheckNamespace validates a namespace (or a prefix, with allowEmpty) given
// as field, naming the bad label.
func CheckNamespace(field string, ns []string, allowEmpty bool) error {
	if len(ns) == 0 && !allowEmpty {
		return Invalid(FieldError{Field: field, Message: "must have at least 1 label"})
	}
	if len(ns) > MaxNamespaceDepth {
		return Invalid(FieldError{Field: field, Message: "must have at most " + strconv.Itoa(MaxNamespaceDepth) + " labels"})
	}
	for i, l := range ns {
		if msg := CheckLabel(l); msg != "" {
			return Invalid(FieldError{Field: field + "[" + strconv.Itoa(i) + "]", Message: msg})
		}
	}
	return nil
}

// CheckItemKey validates an item's key: 1 to MaxItemKeyChars characters, no
// control characters, and not "." or "..", which URL paths resolve away.
func CheckItemKey(field, k string) error {
	msg := ""
	switch n := utf8.RuneCountInString(k); {
	case n == 0 || n > MaxItemKeyChars:
		msg = "must be 1 to " + strconv.Itoa(MaxItemKeyChars) + " characters long"
	case !utf8.ValidString(k):
		msg = "must be valid UTF-8"
	case k == "." || k == "..":
		msg = "must not be '.' or '..' (URL paths resolve them away)"
	case strings.IndexFunc(k, unicode.IsControl) >= 0:
		msg = "must not contain control characters"
	}
	if msg != "" {
		return Invalid(FieldError{Field: field, Message: msg})
	}
	return nil
}

// JoinNamespace is a namespace as one string (NamespaceSep between labels).
func JoinNamespace(ns []string) string { return strings.Join(ns, NamespaceSep) }

// SplitNamespace reads what JoinNamespace wrote; "" is the empty namespace.
func SplitNamespace(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, NamespaceSep)
}

// ItemRef names one item: whose space, which namespace, which key.
type ItemRef struct {
	UserID    string // "": the tenant's shared space
	Namespace []string
	Key       string
}

// Check validates the namespace and key, naming them as a request gives them.
func (r ItemRef) Check(nsField, keyField string) error {
	if err := CheckNamespace(nsField, r.Namespace, false); err != nil {
		return err
	}
	return CheckItemKey(keyField, r.Key)
}

// ItemIndex is a put's `index`: false (embed nothing), or the value's paths
// whose text is embedded, in LangGraph's path syntax (ItemTexts).
type ItemIndex struct {
	Off   bool
	Paths []string
}

// UnmarshalJSON takes false or an array of paths.
func (x *ItemIndex) UnmarshalJSON(b []byte) error {
	switch s := string(trimSpace(b)); {
	case s == "false":
		*x = ItemIndex{Off: true}
		return nil
	case strings.HasPrefix(s, "["):
		var paths []string
		if err := json.Unmarshal(b, &paths); err != nil {
			return valueError("must be false or an array of paths")
		}
		*x = ItemIndex{Paths: paths}
		if x.Paths == nil {
			x.Paths = []string{}
		}
		return nil
	}
	return valueError("must be false or an array of paths")
}

// MarshalJSON writes false or the paths.
func (x ItemIndex) MarshalJSON() ([]byte, error) {
	if x.Off {
		return []byte("false"), nil
	}
	return json.Marshal(x.Paths)
}

// PutItem is the input of PUT /v1/items/{namespace}/{key} and of a batch's
// put: the whole value, and how the item is embedded and expires.
type PutItem struct {
	Value Object `json:"value"`
	// Index picks the value's texts embedded for search by meaning; absent
	// or false: none.
	Index *ItemIndex `json:"index,omitempty"`
	// TTLSeconds makes the item expire that long after the put, and after
	// each read that asks to refresh it; ExpiresAt is a fixed time instead.
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"`
	ExpiresAt  *Time  `json:"expires_at,omitempty"`
	// ServerEmbeds says the server has a default embedding endpoint: indexed
	// texts then wait for one even if the tenant names none.
	ServerEmbeds bool `json:"-"`
}

// Validate checks what tags cannot, naming fields under prefix ("" for a
// request body, "ops[3]." in a batch).
func (in PutItem) Validate() error { return in.check("") }

func (in PutItem) check(prefix string) error {
	var fields []FieldError
	if in.Value == nil {
		fields = append(fields, FieldError{Field: prefix + "value", Message: "is required (an object)"})
	}
	if in.TTLSeconds != nil && (*in.TTLSeconds < 1 || *in.TTLSeconds > MaxTTLSeconds) {
		fields = append(fields, FieldError{Field: prefix + "ttl_seconds", Message: "must be from 1 to " + strconv.Itoa(MaxTTLSeconds)})
	}
	if in.TTLSeconds != nil && in.ExpiresAt != nil {
		fields = append(fields, FieldError{Field: prefix + "expires_at", Message: "is not allowed with ttl_seconds"})
	}
	if in.Index != nil && !in.Index.Off {
		if len(in.Index.Paths) > MaxItemIndexPaths {
			fields = append(fields, FieldError{Field: prefix + "index", Message: "must have at most " + strconv.Itoa(MaxItemIndexPaths) + " paths"})
		}
		for i, p := range in.Index.Paths {
			if msg := CheckItemPath(p); msg != "" {
				fields = append(fields, FieldError{Field: prefix + "index[" + strconv.Itoa(i) + "]", Message: msg})
			}
		}
	}
	if fields == nil && in.Value != nil {
		if _, err := ItemTexts(in.Value, in.IndexPaths()); err != nil {
			fields = append(fields, FieldError{Field: prefix + "index", Message: err.Error()})
		}
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}

// IndexPaths is the paths to embed; nil: none.
func (in PutItem) IndexPaths() []string {
	if in.Index == nil || in.Index.Off || len(in.Index.Paths) == 0 {
		return nil
	}
	return in.Index.Paths
}

// Expiry is the expires_at a put at now gives the item.
func (in PutItem) Expiry(now Time) *Time {
	switch {
	case in.TTLSeconds != nil:
		t := now + Time(*in.TTLSeconds*1000)
		return &t
	case in.ExpiresAt != nil:
		t := *in.ExpiresAt
		return &t
	}
	return nil
}

// ItemFence is a write's condition on the item's current version: none (the
// zero value), that it exists (If-Match: *), that it does not (If-None-Match:
// *, or a batch's if_version 0), or that it is at Version (If-Match: "n"; a
// tag this server could not have made is a version no item has, -1).
type ItemFence struct {
	Exists  bool
	Absent  bool
	Version int64
}

// Check refuses the write unless the item's current version (0: no item)
// meets the fence.
func (f ItemFence) Check(ref ItemRef, have int64) error {
	ok := true
	switch {
	case f.Absent:
		ok = have == 0
	case f.Exists:
		ok = have > 0
	case f.Version != 0:
		ok = have == f.Version
	}
	if ok {
		return nil
	}
	what := fmt.Sprintf("item %q in namespace %q", ref.Key, JoinNamespace(ref.Namespace))
	if have == 0 {
		return &Error{Kind: KindPrecondition, Code: "precondition_failed",
			Msg: what + " does not exist, which the write's condition (If-Match, if_version) does not allow; read it again and retry"}
	}
	return &Error{Kind: KindPrecondition, Code: "precondition_failed",
		Msg: fmt.Sprintf("%s is at version %d, which the write's condition (If-Match, If-None-Match, if_version) does not allow; read it again and retry", what, have)}
}

// ItemSearch is a search of one space's items under a namespace prefix.
type ItemSearch struct {
	Prefix []string
	Filter []ItemCondition
	// Query, when set, ranks the items by meaning: QueryEmbedding is its
	// embedding by QueryModel, which only texts embedded by that model are
	// compared with.
	Query          string
	QueryEmbedding []float32
	QueryModel     string
	Limit          int
	Offset         int
	Cursor         string
	// RefreshTTL moves the expires_at of the items found that have a TTL.
	RefreshTTL bool
}

// NamespaceQuery is a namespace listing: the distinct namespaces of one
// space's live items that match Prefix and Suffix (NamespaceWildcard matches
// any label), cut to MaxDepth labels (0: whole), in label order.
type NamespaceQuery struct {
	Prefix   []string
	Suffix   []string
	MaxDepth int
	Limit    int
	Offset   int
}

// Matches reports whether ns matches the listing's prefix and suffix.
func (q NamespaceQuery) Matches(ns []string) bool {
	if len(q.Prefix) > len(ns) || len(q.Suffix) > len(ns) {
		return false
	}
	for i, l := range q.Prefix {
		if l != NamespaceWildcard && l != ns[i] {
			return false
		}
	}
	off := len(ns) - len(q.Suffix)
	for i, l := range q.Suffix {
		if l != NamespaceWildcard && l != ns[off+i] {
			return false
		}
	}
	return true
}

// LiteralPrefix is the prefix's labels before its first wildcard: every
// match lies under it, so a store reads only those.
func (q NamespaceQuery) LiteralPrefix() []string {
	for i, l := range q.Prefix {
		if l == NamespaceWildcard {
			return q.Prefix[:i]
		}
	}
	return q.Prefix
}

// NamespacePage is a page of a namespace listing.
type NamespacePage struct {
	Data    [][]string `json:"data"`
	HasMore bool       `json:"has_more"`
}

// CheckPattern validates a listing's prefix or suffix: labels or wildcards.
func CheckPattern(field string, p []string) error {
	if len(p) > MaxNamespaceDepth {
		return Invalid(FieldError{Field: field, Message: "must have at most " + strconv.Itoa(MaxNamespaceDepth) + " labels"})
	}
	for i, l := range p {
		if l == NamespaceWildcard {
			continue
		}
		if msg := CheckLabel(l); msg != "" {
			return Invalid(FieldError{Field: field + "[" + strconv.Itoa(i) + "]", Message: msg})
		}
	}
	return nil
}
