package api

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// The item store's routes. Every one acts on one space: the tenant's shared
// items, or one end user's. A key bound to a user acts on that user's items
// only (another user_id is 403); any other key names a user with
// ?user_id=, and without it acts on the shared items.

// itemSpace is the user whose items the request acts on ("": the shared
// ones), from ?user_id= and the key.
func itemSpace(r *http.Request, q *query) (string, error) {
	asked := q.str("user_id")
	if utf8.RuneCountInString(asked) > 128 || strings.IndexFunc(asked, unicode.IsControl) >= 0 {
		q.fail("user_id", "must be 1 to 128 characters, none of them control characters")
	}
	if err := q.err(); err != nil {
		return "", err
	}
	p := principalOf(r)
	if p.UserID == "" {
		return asked, nil
	}
	if asked != "" && asked != p.UserID {
		return "", model.ForbiddenForUser(p.UserID)
	}
	return p.UserID, nil
}

// itemRef reads the item a route names: {namespace} as its labels joined by
// dots, {key}, each percent-decoded (a key may hold a slash, sent as %2F).
func itemRef(r *http.Request, user string) (model.ItemRef, error) {
	ns, key := chi.URLParam(r, "namespace"), chi.URLParam(r, "key")
	if r.URL.RawPath != "" {
		// chi routed the escaped path, so its parameters are escaped too.
		var err1, err2 error
		ns, err1 = url.PathUnescape(ns)
		key, err2 = url.PathUnescape(key)
		if err1 != nil || err2 != nil {
			return model.ItemRef{}, model.Invalid(model.FieldError{Field: "key", Message: "is not valid percent-encoding"})
		}
	}
	ref := model.ItemRef{UserID: user, Namespace: strings.Split(ns, model.NamespaceSep), Key: key}
	return ref, ref.Check("namespace", "key")
}

// requireWrite refuses a read that writes (a TTL refresh, a batch's puts) to
// a key whose scope is read.
func requireWrite(r *http.Request) error {
	if p := principalOf(r); !p.Scope.Allows(model.ScopeWrite) {
		return model.Forbidden(p.Scope, model.ScopeWrite)
	}
	return nil
}

// writeItem answers with an item and its version as a strong ETag, for
// If-Match, as writeBlock does.
func (s *Server) writeItem(w http.ResponseWriter, r *http.Request, status int, it model.Item) {
	w.Header().Set("ETag", etag(it.Version))
	s.writeJSON(w, r, status, it)
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "user_id", "refresh_ttl")
	refresh := q.flag("refresh_ttl")
	user, err := itemSpace(r, q)
	if err == nil && refresh {
		err = requireWrite(r)
	}
	var ref model.ItemRef
	if err == nil {
		ref, err = itemRef(r, user)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	it, err := s.store.GetItem(r.Context(), tenantOf(r), ref, refresh)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.countItems(model.ItemGet, 1)
	s.writeItem(w, r, http.StatusOK, it)
}

// putItem creates or replaces an item; If-Match makes it replace only the
// version the client read, If-None-Match: * only create (412 otherwise).
func (s *Server) putItem(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "user_id")
	user, err := itemSpace(r, q)
	var ref model.ItemRef
	if err == nil {
		ref, err = itemRef(r, user)
	}
	var fence model.ItemFence
	if err == nil {
		fence, err = itemFence(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := decode[model.PutItem](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in.ServerEmbeds = s.embeddings.Default != nil
	out, err := s.store.WriteItems(r.Context(), tenantOf(r), []model.ItemWrite{{Ref: ref, Put: in, Fence: fence}})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.countItems(model.ItemPut, 1)
	it := out[0].Item
	s.wakeForItems(it)
	status := http.StatusOK
	if out[0].Created {
		status = http.StatusCreated
		w.Header().Set("Location", r.URL.EscapedPath()) // a key may hold what a URL must escape
	}
	s.writeItem(w, r, status, it)
}

// itemFence reads a write's condition: If-Match as ifMatch reads it for
// blocks, or If-None-Match: * (the item must not exist).
func itemFence(r *http.Request) (model.ItemFence, error) {
	if h := strings.TrimSpace(r.Header.Get("If-None-Match")); h != "" {
		if h != "*" {
			return model.ItemFence{}, model.Invalid(model.FieldError{Field: "If-None-Match",
				Message: "on an item write takes only *: create the item only if it does not exist"})
		}
		return model.ItemFence{Absent: true}, nil
	}
	v := ifMatch(r)
	switch {
	case v == nil:
		return model.ItemFence{}, nil
	case *v == 0: // *
		return model.ItemFence{Exists: true}, nil
	}
	return model.ItemFence{Version: *v}, nil
}

func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "user_id")
	user, err := itemSpace(r, q)
	var ref model.ItemRef
	if err == nil {
		ref, err = itemRef(r, user)
	}
	var fence model.ItemFence
	if err == nil {
		fence, err = itemFence(r)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.store.WriteItems(r.Context(), tenantOf(r), []model.ItemWrite{{Ref: ref, Delete: true, Fence: fence}})
	if err == nil && !out[0].Deleted {
		err = model.NotFound("item", ref.Key)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.countItems(model.ItemDelete, 1)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) searchItems(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "user_id")
	user, err := itemSpace(r, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := decode[model.SearchItems](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := b.Compile("")
	if err == nil && in.RefreshTTL {
		err = requireWrite(r)
	}
	if err == nil && in.Query != "" {
		in.QueryEmbedding, in.QueryModel, err = s.itemsQueryEmbedding(r, in.Query)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A search that refreshes TTLs writes: a batch runs the search, then the
	// refresh.
	res, err := s.store.ItemBatch(r.Context(), tenantOf(r), user, []model.ItemRequest{{Op: model.ItemSearchOp, Search: in}})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.countItems(model.ItemSearchOp, 1)
	s.writeJSON(w, r, http.StatusOK, res[0].Hits)
}

func (s *Server) listItemNamespaces(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "user_id", "prefix", "suffix", "max_depth", "limit", "offset")
	in := model.ListNamespaces{Prefix: pattern(q.str("prefix")), Suffix: pattern(q.str("suffix")),
		MaxDepth: int(q.seq("max_depth")), Limit: int(q.seq("limit")), Offset: int(q.seq("offset"))}
	if q.has("limit") && in.Limit == 0 {
		q.fail("limit", "must be from 1 to 1000")
	}
	user, err := itemSpace(r, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := in.Compile("")
	if err != nil {
		s.writeError(w, r, asQueryError(err))
		return
	}
	page, err := s.store.ListNamespaces(r.Context(), tenantOf(r), user, list)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.countItems(model.ItemListNamespaces, 1)
	s.writeJSON(w, r, http.StatusOK, page)
}

// pattern reads a listing's prefix or suffix: labels (or *) joined by dots.
func pattern(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, model.NamespaceSep)
}

// asQueryError turns a field error of parameters read from the query string
// into the 400 invalid_query that bad parameters are everywhere else.
func asQueryError(err error) error {
	e := model.AsError(err)
	if e.Kind != model.KindInvalid || len(e.Fields) == 0 {
		return err
	}
	out := model.InvalidQuery(e.Fields[0].Field, e.Fields[0].Message)
	out.Fields = e.Fields
	return out
}

// itemBatch runs several operations in one request (model.ItemBatch,
// repo.RunItemBatch): a key with read scope may send reads only.
func (s *Server) itemBatch(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "user_id")
	user, err := itemSpace(r, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := decode[model.ItemBatch](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reqs, err := b.Compile()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.prepareBatch(r, reqs); err != nil {
		s.writeError(w, r, err)
		return
	}
	results, err := s.store.ItemBatch(r.Context(), tenantOf(r), user, reqs)
	if err != nil {
		s.writeError(w, r, batchError(err))
		return
	}
	for _, res := range results {
		s.countItems(res.Op, 1)
		if res.Op == model.ItemPut && res.Item != nil {
			s.wakeForItems(*res.Item)
		}
	}
	s.writeJSON(w, r, http.StatusOK, model.ItemBatchResult{Results: results})
}

// prepareBatch refuses writes to a key with read scope, and embeds the
// searches' queries: once per distinct query, as LangGraph's stores do.
func (s *Server) prepareBatch(r *http.Request, reqs []model.ItemRequest) error {
	type embedded struct {
		v     []float32
		model string
	}
	done := map[string]embedded{}
	for i := range reqs {
		req := &reqs[i]
		if req.Writes() {
			if err := requireWrite(r); err != nil {
				return err
			}
		}
		req.Put.ServerEmbeds = s.embeddings.Default != nil
		if req.Op != model.ItemSearchOp || req.Search.Query == "" {
			continue
		}
		e, ok := done[req.Search.Query]
		if !ok {
			var err error
			if e.v, e.model, err = s.itemsQueryEmbedding(r, req.Search.Query); err != nil {
				return prefixFields(err, "ops["+strconv.Itoa(i)+"].")
			}
			done[req.Search.Query] = e
		}
		req.Search.QueryEmbedding, req.Search.QueryModel = e.v, e.model
	}
	return nil
}

// itemsQueryEmbedding embeds a search's query with the tenant's endpoint
// (or the server's), and says which model did.
func (s *Server) itemsQueryEmbedding(r *http.Request, text string) ([]float32, string, error) {
	if s.embeddings.Query == nil {
		return nil, "", model.Invalid(model.FieldError{Field: "query",
			Message: "needs an embedding endpoint, and this server computes no embeddings (--embedding-url)"})
	}
	return s.embeddings.Query.EmbedItemsQuery(r.Context(), tenantOf(r), text)
}

// wakeForItems tells the embedding worker an item has texts waiting.
func (s *Server) wakeForItems(it model.Item) {
	if it.EmbeddingState != nil && *it.EmbeddingState == model.EmbeddingPending && s.embeddings.Wake != nil {
		s.embeddings.Wake()
	}
}

// countItems tells the metrics of item operations done.
func (s *Server) countItems(op string, n int) {
	if s.itemOps != nil {
		s.itemOps.ItemOperations(op, n)
	}
}

// batchError names the operation of a batch that failed: its fields under
// ops[i], or, for a failed fence, ops[i].if_version.
func batchError(err error) error {
	var failed *repo.ItemOpFailed
	if !errors.As(err, &failed) {
		return err
	}
	e := model.AsError(failed.Err)
	at := "ops[" + strconv.Itoa(failed.Index) + "]."
	if e.Kind == model.KindPrecondition && len(e.Fields) == 0 {
		cp := *e
		cp.Fields = []model.FieldError{{Field: at + "if_version", Message: e.Msg}}
		return &cp
	}
	return prefixFields(e, at)
}

// prefixFields names an error's fields under prefix.
func prefixFields(err error, prefix string) error {
	e := model.AsError(err)
	if len(e.Fields) == 0 {
		return err
	}
	cp := *e
	cp.Fields = make([]model.FieldError, len(e.Fields))
	for i, f := range e.Fields {
		cp.Fields[i] = model.FieldError{Field: prefix + f.Field, Message: f.Message}
	}
	return &cp
}

// exportItems streams the items of one space under a prefix, or, with
// all_users, of every space (not for a key bound to a user), as NDJSON.
func (s *Server) exportItems(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "user_id", "all_users", "namespace_prefix")
	f := model.ItemExportFilter{AllUsers: q.flag("all_users"), Prefix: pattern(q.str("namespace_prefix"))}
	if f.AllUsers && q.has("user_id") {
		q.fail("all_users", "is not allowed with user_id")
	}
	user, err := itemSpace(r, q)
	if err == nil && f.AllUsers && principalOf(r).UserID != "" {
		err = model.ForbiddenForUser(principalOf(r).UserID)
	}
	if err == nil {
		err = asQueryError(model.CheckNamespace("namespace_prefix", f.Prefix, true))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f.UserID = user
	s.streamExport(w, r, func(out io.Writer) error {
		return s.store.ExportItems(r.Context(), tenantOf(r), f, out)
	})
}

// importItems restores an items export: all of it or nothing; an item the
// tenant has is a conflict unless replace=true overwrites it.
func (s *Server) importItems(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "replace")
	replace := q.flag("replace")
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	body, ok := s.ndjsonBody(w, r)
	if !ok {
		return
	}
	res, err := s.store.ImportItems(r.Context(), tenantOf(r), body,
		model.ItemImportOptions{Replace: replace, ServerEmbeds: s.embeddings.Default != nil})
	if err != nil {
		s.writeError(w, r, importError(err))
		return
	}
	if s.embeddings.Wake != nil {
		s.embeddings.Wake()
	}
	s.writeJSON(w, r, http.StatusOK, res)
}
