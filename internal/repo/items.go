package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/logbook/logbook/internal/model"
)

// Items: the item store, a namespaced document store per tenant and per end
// user (model.Item). Reads hide expired items; the expiry sweep erases them.
type Items interface {
	// GetItem reads one item; with refreshTTL, an item with a TTL has its
	// expires_at moved ahead of now first. Errors: KindNotFound.
	GetItem(ctx context.Context, tenant string, ref model.ItemRef, refreshTTL bool) (model.Item, error)
	// WriteItems applies puts, deletes and TTL refreshes in order, in one
	// transaction: all of them, or none. A put's texts to embed wait for
	// the embedding worker. Errors: KindPrecondition (a fence), KindInvalid.
	WriteItems(ctx context.Context, tenant string, writes []model.ItemWrite) ([]model.ItemWritten, error)
	// SearchItems pages through the live items of user's space ("": the
	// tenant's shared one) under a namespace prefix that pass the filter:
	// by (namespace, key) with a cursor, or, with a query embedding, ranked
	// by meaning (RankItems) with an offset. Errors: invalid_cursor.
	SearchItems(ctx context.Context, tenant, user string, in model.ItemSearch) (model.Page[model.ItemHit], error)
	// ListNamespaces lists the distinct namespaces of user's live items
	// (model.NamespaceQuery).
	ListNamespaces(ctx context.Context, tenant, user string, in model.NamespaceQuery) (model.NamespacePage, error)
	// ItemBatch runs a batch's operations (RunItemBatch).
	ItemBatch(ctx context.Context, tenant, user string, reqs []model.ItemRequest) ([]model.ItemResult, error)
	// ExportItems writes the live items f picks, with their embedded texts,
	// as an items export (model.ItemsExportLine), from one snapshot.
	ExportItems(ctx context.Context, tenant string, f model.ItemExportFilter, w io.Writer) error
	// ImportItems restores an items export, all of it or nothing, each item
	// in the space its line names. Errors: invalid_import, malformed_json,
	// conflict (an item the tenant has, without opts.Replace).
	ImportItems(ctx context.Context, tenant string, r io.Reader, opts model.ItemImportOptions) (model.ItemsImportResult, error)
}

// RunItemBatch runs a batch as LangGraph's stores do: its reads (gets,
// searches, listings) first, each as the items stood before the batch, then
// its writes (puts, deletes, and the TTL refreshes its reads asked for) in
// order, in one transaction. A batch that fails writes nothing; its error
// names the operation (ops[i]). Both backends run batches with it.
func RunItemBatch(ctx context.Context, st Items, tenant, user string, reqs []model.ItemRequest) ([]model.ItemResult, error) {
	now := model.Now()
	out := make([]model.ItemResult, len(reqs))
	var (
		writes  []model.ItemWrite
		writeAt []int // the result each write fills (-1: a refresh)
		touched = map[string]bool{}
		touch   = func(it *model.Item) {
			if it.TTLSeconds == nil {
				return
			}
			t := now + model.Time(*it.TTLSeconds*1000)
			it.ExpiresAt = &t
			k := model.JoinNamespace(it.Namespace) + "\x00" + it.Key
			if !touched[k] {
				touched[k] = true
				writes = append(writes, model.ItemWrite{Ref: model.ItemRef{UserID: user, Namespace: it.Namespace, Key: it.Key}, Touch: true, At: now})
				writeAt = append(writeAt, -1)
			}
		}
	)
	for i, r := range reqs {
		out[i].Op = r.Op
		switch r.Op {
		case model.ItemGet:
			r.Ref.UserID = user
			it, err := st.GetItem(ctx, tenant, r.Ref, false)
			if model.IsNotFound(err, "item") {
				continue
			}
			if err != nil {
				return nil, err
			}
			if r.RefreshTTL {
				touch(&it)
			}
			out[i].Item = &it
		case model.ItemSearchOp:
			in := r.Search
			in.RefreshTTL = false
			page, err := st.SearchItems(ctx, tenant, user, in)
			if err != nil {
				return nil, &ItemOpFailed{Index: i, Err: err}
			}
			if r.Search.RefreshTTL {
				for j := range page.Data {
					touch(&page.Data[j].Item)
				}
			}
			out[i].Hits = page
		case model.ItemListNamespaces:
			page, err := st.ListNamespaces(ctx, tenant, user, r.List)
			if err != nil {
				return nil, &ItemOpFailed{Index: i, Err: err}
			}
			out[i].Namespaces = page
		}
	}
	for i, r := range reqs {
		if r.Op == model.ItemPut || r.Op == model.ItemDelete {
			r.Ref.UserID = user
			writes = append(writes, model.ItemWrite{Ref: r.Ref, Delete: r.Op == model.ItemDelete, Put: r.Put, Fence: r.Fence})
			writeAt = append(writeAt, i)
		}
	}
	if len(writes) == 0 {
		return out, nil
	}
	done, err := st.WriteItems(ctx, tenant, writes)
	var failed *ItemOpFailed
	if errors.As(err, &failed) && writeAt[failed.Index] >= 0 {
		return nil, &ItemOpFailed{Index: writeAt[failed.Index], Err: failed.Err}
	}
	if err != nil {
		return nil, err
	}
	for j, w := range done {
		i := writeAt[j]
		switch {
		case i < 0:
		case reqs[i].Op == model.ItemPut:
			it := w.Item
			out[i].Item = &it
		default:
			out[i].Deleted = w.Deleted
		}
	}
	return out, nil
}

// ItemFingerprint is the identity of a search a cursor is bound to.
func ItemFingerprint(user string, in model.ItemSearch) string {
	return Fingerprint("items", user, in.Prefix, in.Filter)
}

// ItemCursor is the position after an item in (namespace, key) order.
func ItemCursor(q string, it model.Item) Cursor {
	return Cursor{Q: q, S: model.JoinNamespace(it.Namespace) + "\x00" + it.Key}
}

// ItemAfter reads a search's cursor: the namespace and key to go on after
// (ok false: from the start). Errors: invalid_cursor.
func ItemAfter(user string, in model.ItemSearch) (ns, key string, ok bool, err error) {
	c, ok, err := DecodeCursor(in.Cursor, ItemFingerprint(user, in))
	if err != nil || !ok {
		return "", "", false, err
	}
	ns, key, found := strings.Cut(c.S, "\x00")
	if !found {
		return "", "", false, &model.Error{Kind: model.KindBadRequest, Code: "invalid_cursor",
			Msg: "Cursor is not valid for this list; start again without a cursor", Fields: []model.FieldError{{Field: "cursor", Message: "not a cursor of this search"}}}
	}
	return ns, key, true, nil
}

// ItemPrefixRange is the range of namespace strings under a prefix: the
// prefix itself, or anything in [prefix+".", prefix+"/"), "/" being the
// byte after ".", compared bytewise. An empty prefix is every namespace.
func ItemPrefixRange(prefix []string) (exact, from, to string) {
	p := model.JoinNamespace(prefix)
	return p, p + model.NamespaceSep, p + "/"
}

// ItemCandidate is a live item that may answer a search by meaning, with
// its namespace and key for the order of ties.
type ItemCandidate struct {
	ID        string
	Namespace string
	Key       string
}

// ItemVectors calls visit with every candidate item and each of its
// embedded texts (embedding nil for an item with none), in a buffer visit
// must not keep.
type ItemVectors func(visit func(c ItemCandidate, embedding []float32)) error

// ItemScore is a candidate with its score (nil: no embedded text).
type ItemScore struct {
	ItemCandidate
	Score *float64
}

// RankItems ranks a search's candidates by meaning, as LangGraph's stores
// do: by the best cosine similarity of the query with any of an item's
// texts, best first; then the items without an embedded text; ties in
// (namespace, key) order. It returns the page at offset (limit items) and
// whether more follow.
func RankItems(q []float32, vectors ItemVectors, offset, limit int) ([]ItemScore, bool, error) {
	byID := map[string]int{}
	var all []ItemScore
	err := vectors(func(c ItemCandidate, emb []float32) {
		i, ok := byID[c.ID]
		if !ok {
			i = len(all)
			byID[c.ID] = i
			all = append(all, ItemScore{ItemCandidate: c})
		}
		if len(emb) != len(q) || len(q) == 0 {
			return
		}
		s := Cosine(q, emb)
		if all[i].Score == nil || s > *all[i].Score {
			all[i].Score = &s
		}
	})
	if err != nil {
		return nil, false, err
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if (a.Score == nil) != (b.Score == nil) {
			return a.Score != nil
		}
		if a.Score != nil && *a.Score != *b.Score {
			return *a.Score > *b.Score
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Key < b.Key
	})
	more := offset+limit < len(all)
	return PageHits(all, offset, limit), more, nil
}

// OrderItems puts items read by id in the order of the ranking, with their
// scores; an item missing (deleted since) is skipped.
func OrderItems(ranked []ItemScore, items []model.Item) []model.ItemHit {
	byID := make(map[string]model.Item, len(items))
	for _, it := range items {
		byID[itemKey(it)] = it
	}
	out := make([]model.ItemHit, 0, len(ranked))
	for _, r := range ranked {
		if it, ok := byID[r.Namespace+"\x00"+r.Key]; ok {
			out = append(out, model.ItemHit{Item: it, Score: r.Score})
		}
	}
	return out
}

func itemKey(it model.Item) string { return model.JoinNamespace(it.Namespace) + "\x00" + it.Key }

// PageNamespaces answers a listing from the distinct namespaces under its
// literal prefix, in any order: those that match, cut to MaxDepth labels,
// without repeats, in label order, at Offset, Limit of them.
func PageNamespaces(in model.NamespaceQuery, namespaces []string) model.NamespacePage {
	seen := map[string]bool{}
	var out [][]string
	for _, s := range namespaces {
		ns := model.SplitNamespace(s)
		if !in.Matches(ns) {
			continue
		}
		if in.MaxDepth > 0 && len(ns) > in.MaxDepth {
			ns = ns[:in.MaxDepth]
		}
		k := model.JoinNamespace(ns)
		if !seen[k] {
			seen[k] = true
			out = append(out, ns)
		}
	}
	slices.SortFunc(out, slices.Compare[[]string])
	page := model.NamespacePage{Data: PageHits(out, in.Offset, in.Limit), HasMore: in.Offset+in.Limit < len(out)}
	if page.Data == nil {
		page.Data = [][]string{}
	}
	return page
}

// ItemTextsToEmbed is what a put embeds: the texts of its index paths, when
// an endpoint will embed them (serverEmbeds, or the tenant names one).
func ItemTextsToEmbed(in model.PutItem, endpoint bool) []model.ItemText {
	if !endpoint {
		return nil
	}
	texts, _ := model.ItemTexts(in.Value, in.IndexPaths()) // checked when the put was decoded
	return texts
}

// ItemRow is an items row as both backends read it (ItemColumns, in order).
type ItemRow struct {
	Namespace, Key, Value, UserID  string
	Version                        int64
	IndexPaths                     *string
	EmbeddingState, EmbeddingError *string
	CreatedAt, UpdatedAt           int64
	ExpiresAt, TTLSeconds          *int64
}

// ItemColumns are the columns ItemRow.Dest scans, of the items table as i.
const ItemColumns = `i.namespace, i.key, i.value, i.user_id, i.version, i.index_paths, i.embedding_state,
	i.embedding_error, i.created_at, i.updated_at, i.expires_at, i.ttl_seconds`

// Dest is where a scan of ItemColumns goes.
func (r *ItemRow) Dest() []any {
	return []any{&r.Namespace, &r.Key, &r.Value, &r.UserID, &r.Version, &r.IndexPaths, &r.EmbeddingState,
		&r.EmbeddingError, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt, &r.TTLSeconds}
}

// Item is the row as the API shows it.
func (r ItemRow) Item() (model.Item, error) {
	it := model.Item{Namespace: model.SplitNamespace(r.Namespace), Key: r.Key, Value: model.Object(r.Value),
		Version: r.Version, EmbeddingState: r.EmbeddingState, EmbeddingError: r.EmbeddingError,
		CreatedAt: model.Time(r.CreatedAt), UpdatedAt: model.Time(r.UpdatedAt), TTLSeconds: r.TTLSeconds}
	if r.UserID != "" {
		u := r.UserID
		it.UserID = &u
	}
	if r.ExpiresAt != nil {
		t := model.Time(*r.ExpiresAt)
		it.ExpiresAt = &t
	}
	if r.IndexPaths != nil {
		if err := json.Unmarshal([]byte(*r.IndexPaths), &it.Index); err != nil {
			return it, fmt.Errorf("item %s index_paths: %w", r.Key, err)
		}
	}
	return it, nil
}

// EncodeIndexPaths is a put's index_paths column: nil when nothing is indexed.
func EncodeIndexPaths(in model.PutItem) *string {
	p := in.IndexPaths()
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(p)
	s := string(b)
	return &s
}

// ItemOpFailed is an error of the Index'th write of WriteItems, or, from
// RunItemBatch, of the batch's Index'th operation: the API names the
// operation in the problem. Errors, as model errors, pass through it.
type ItemOpFailed struct {
	Index int
	Err   error
}

func (e *ItemOpFailed) Error() string { return e.Err.Error() }
func (e *ItemOpFailed) Unwrap() error { return e.Err }

// ItemWriteError marks err as WriteItems's i'th write's.
func ItemWriteError(i int, err error) error {
	if err == nil {
		return nil
	}
	return &ItemOpFailed{Index: i, Err: err}
}

// ItemHits is a page of items read without a query: no scores.
func ItemHits(p model.Page[model.Item]) model.Page[model.ItemHit] {
	out := model.Page[model.ItemHit]{Data: make([]model.ItemHit, len(p.Data)), HasMore: p.HasMore, NextCursor: p.NextCursor}
	for i, it := range p.Data {
		out.Data[i] = model.ItemHit{Item: it}
	}
	return out
}

// RestoredTexts sorts an imported item's texts (those its index paths pick
// from its value) into the ones its export carries an embedding of, which
// the import stores ready, and the others, which wait for the worker when
// an endpoint will embed them (endpoint) and are left out otherwise.
func RestoredTexts(it model.ExportItem, endpoint bool) (ready []model.ExportItemVector, pending []model.ItemText, err error) {
	texts, err := model.ItemTexts(it.Value, it.Index)
	if err != nil {
		return nil, nil, err
	}
	have := make(map[string]model.ExportItemVector, len(it.Vectors))
	for _, v := range it.Vectors {
		have[v.Field] = v
	}
	for _, t := range texts {
		if v, ok := have[t.Field]; ok && v.Text == t.Text {
			ready = append(ready, v)
		} else if endpoint {
			pending = append(pending, t)
		}
	}
	return ready, pending, nil
}

// ItemExportRow is an item and one of its embedded texts (Field empty: none),
// as an export reads them, item by item, texts in field order.
type ItemExportRow struct {
	ItemID string
	Item   model.Item
	Vector model.ExportItemVector
}

// GroupExportRows writes the rows that next yields as export lines, one per
// item with its embedded texts. next returns false after the last row.
func GroupExportRows(next func() (ItemExportRow, bool, error), write func(*model.ExportItem) error) error {
	var (
		cur   *model.ExportItem
		curID string
	)
	for {
		r, ok, err := next()
		if err != nil {
			return err
		}
		if !ok || r.ItemID != curID {
			if cur != nil {
				if err := write(cur); err != nil {
					return err
				}
			}
			if !ok {
				return nil
			}
			it := r.Item
			cur = &model.ExportItem{Namespace: it.Namespace, Key: it.Key, UserID: it.UserID, Value: it.Value, Version: it.Version,
				Index: it.Index, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, ExpiresAt: it.ExpiresAt, TTLSeconds: it.TTLSeconds}
			curID = r.ItemID
		}
		if r.Vector.Field != "" {
			cur.Vectors = append(cur.Vectors, r.Vector)
		}
	}
}
