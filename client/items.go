package client

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/logbook/logbook/client/api"
)

// The item store: JSON objects under a namespace and a key, found by key,
// by filters on their values and by meaning (LangGraph's BaseStore, Google
// ADK's app: and user: state). Each call acts on one space: the tenant's
// shared items, or one end user's ([ForUser]).

// ItemOption changes one item call.
type ItemOption func(*itemOptions)

type itemOptions struct {
	user    *string
	ifMatch *string
	absent  bool
	refresh bool
}

// ForUser makes the call act on that end user's items instead of the
// tenant's shared ones. A key bound to a user acts on its own user's items
// whatever this says (another user is 403).
func ForUser(userID string) ItemOption {
	return func(o *itemOptions) {
		if userID != "" {
			o.user = &userID
		}
	}
}

// IfVersion makes a put or delete happen only if the item is at that
// version (a *Problem with code precondition_failed otherwise).
func IfVersion(v int64) ItemOption {
	return func(o *itemOptions) { s := `"` + strconv.FormatInt(v, 10) + `"`; o.ifMatch = &s }
}

// IfAbsent makes a put create the item only if it does not exist.
func IfAbsent() ItemOption { return func(o *itemOptions) { o.absent = true } }

// RefreshTTL makes a read move the expiry of an item with a TTL ahead.
func RefreshTTL() ItemOption { return func(o *itemOptions) { o.refresh = true } }

func itemOpts(opts []ItemOption) itemOptions {
	var o itemOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// ns is a namespace as the routes take it: its labels joined by dots.
func ns(namespace []string) string { return strings.Join(namespace, ".") }

// GetItem reads one item; a missing (or expired) one is a *Problem with
// code not_found.
func (c *Client) GetItem(ctx context.Context, namespace []string, key string, opts ...ItemOption) (*api.Item, error) {
	o := itemOpts(opts)
	p := &api.GetItemParams{UserID: o.user}
	if o.refresh {
		p.RefreshTTL = Ptr(true)
	}
	return decode[api.Item](c.raw.GetItem(ctx, ns(namespace), key, p))
}

// PutItem creates or replaces an item's whole value. Without a fence it is
// retried as an idempotent write: a retry whose first try landed writes the
// same value again.
func (c *Client) PutItem(ctx context.Context, namespace []string, key string, in api.ItemPut, opts ...ItemOption) (*api.Item, error) {
	o := itemOpts(opts)
	p := &api.PutItemParams{UserID: o.user, IfMatch: o.ifMatch}
	if o.absent {
		p.IfNoneMatch = Ptr("*")
	}
	if o.ifMatch == nil && !o.absent {
		ctx = repeatable(ctx)
	}
	return decode[api.Item](c.raw.PutItem(ctx, ns(namespace), key, p, in))
}

// DeleteItem deletes an item; a missing one is a *Problem with code
// not_found.
func (c *Client) DeleteItem(ctx context.Context, namespace []string, key string, opts ...ItemOption) error {
	o := itemOpts(opts)
	resp, err := c.raw.DeleteItem(ctx, ns(namespace), key, &api.DeleteItemParams{UserID: o.user, IfMatch: o.ifMatch})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("logbook: read answer: %w", err)
	}
	return Check(resp, body)
}

// SearchItems answers one page of the items under in.NamespacePrefix that
// pass in.Filter, ranked by meaning when in.Query is set.
func (c *Client) SearchItems(ctx context.Context, in api.ItemSearchRequest, opts ...ItemOption) (*api.ItemPage, error) {
	o := itemOpts(opts)
	if in.RefreshTTL == nil || !*in.RefreshTTL {
		ctx = repeatable(ctx)
	}
	return decode[api.ItemPage](c.raw.SearchItems(ctx, &api.SearchItemsParams{UserID: o.user}, in))
}

// ListItemNamespaces lists the namespaces of a space's items (params'
// prefix and suffix are labels joined by dots, * for any label).
func (c *Client) ListItemNamespaces(ctx context.Context, params *api.ListItemNamespacesParams) (*api.NamespacePage, error) {
	return decode[api.NamespacePage](c.raw.ListItemNamespaces(ctx, params))
}

// ItemBatch runs up to 100 operations in one request and answers their
// results in order: reads first, on the items as they were, then the writes
// in one transaction, all or nothing.
func (c *Client) ItemBatch(ctx context.Context, ops []api.ItemOp, opts ...ItemOption) ([]api.ItemResult, error) {
	o := itemOpts(opts)
	reads := true
	for _, op := range ops {
		reads = reads && (op.Op == api.ItemOpGet || op.Op == api.ItemOpSearch || op.Op == api.ItemOpListNamespaces) &&
			(op.RefreshTTL == nil || !*op.RefreshTTL)
	}
	if reads {
		ctx = repeatable(ctx)
	}
	res, err := decode[api.ItemBatchResult](c.raw.ItemBatch(ctx, &api.ItemBatchParams{UserID: o.user}, api.ItemBatchRequest{Ops: ops}))
	if err != nil {
		return nil, err
	}
	return res.Results, nil
}

// IndexPaths is a put's index: the value's paths whose texts are embedded.
func IndexPaths(paths ...string) *api.ItemIndex {
	var x api.ItemIndex
	_ = x.FromItemIndex1(paths) // a list of strings always encodes
	return &x
}

// ExportItems streams a space's items as NDJSON (params.NamespacePrefix,
// params.UserID, or params.AllUsers for every space), for ImportItems.
// Close the reader when done.
func (c *Client) ExportItems(ctx context.Context, params *api.ExportItemsParams) (io.ReadCloser, error) {
	return body(c.raw.ExportItems(ctx, params))
}

// ImportItems stores the items of an export, all or nothing
// (params.Replace: over the items of the same keys). data is read once, as
// ImportSession reads it.
func (c *Client) ImportItems(ctx context.Context, data io.Reader, params *api.ImportItemsParams) (*api.ItemsImportResult, error) {
	return decode[api.ItemsImportResult](c.raw.ImportItemsWithBody(ctx, params, "application/x-ndjson", data))
}
