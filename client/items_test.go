package client_test

import (
	"context"
	"testing"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// The item store through the client: put, read, fence, search with a
// filter, list namespaces, batch and delete, in a user's space and the
// shared one, with a key holding a slash.
func TestItems(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	ns := []string{"client-test", "memories"}
	key := "food/favourite"
	it, err := c.PutItem(ctx, ns, key, api.ItemPut{Value: map[string]any{"text": "ramen", "stars": 5}, Index: client.IndexPaths("text")},
		client.ForUser("ada"))
	if err != nil {
		t.Fatal(err)
	}
	if it.Version != 1 || it.Key != key || it.UserID == nil || *it.UserID != "ada" || len(it.Index) != 1 {
		t.Fatalf("put %+v", it)
	}
	if _, err := c.GetItem(ctx, ns, key); client.Code(err) != api.ErrorCodeNotFound {
		t.Fatalf("the shared space has ada's item: %v", err)
	}
	got, err := c.GetItem(ctx, ns, key, client.ForUser("ada"))
	if err != nil || got.Value["text"] != "ramen" {
		t.Fatalf("get %+v %v", got, err)
	}
	if _, err := c.PutItem(ctx, ns, key, api.ItemPut{Value: map[string]any{}}, client.ForUser("ada"), client.IfVersion(7)); client.Code(err) != api.ErrorCodePreconditionFailed {
		t.Fatalf("stale fence: %v", err)
	}
	if _, err := c.PutItem(ctx, ns, key, api.ItemPut{Value: map[string]any{}}, client.ForUser("ada"), client.IfAbsent()); client.Code(err) != api.ErrorCodePreconditionFailed {
		t.Fatalf("if absent: %v", err)
	}
	if pet, err := c.PutItem(ctx, ns, "pet", api.ItemPut{Value: map[string]any{"text": "a dog", "stars": 2}}, client.ForUser("ada")); err != nil || pet.Version != 1 {
		t.Fatalf("put pet: %+v %v", pet, err)
	}

	page, err := c.SearchItems(ctx, api.ItemSearchRequest{NamespacePrefix: []string{"client-test"},
		Filter: &api.ItemFilter{"stars": map[string]any{"$gte": 3}}}, client.ForUser("ada"))
	if err != nil || len(page.Data) != 1 || page.Data[0].Key != key || page.Data[0].Score != nil {
		t.Fatalf("search %+v %v", page, err)
	}
	names, err := c.ListItemNamespaces(ctx, &api.ListItemNamespacesParams{UserID: client.Ptr("ada"), Prefix: client.Ptr("client-test")})
	if err != nil || len(names.Data) != 1 || len(names.Data[0]) != 2 {
		t.Fatalf("namespaces %+v %v", names, err)
	}

	res, err := c.ItemBatch(ctx, []api.ItemOp{
		{Op: api.ItemOpGet, Namespace: &ns, Key: client.Ptr("pet")},
		{Op: api.ItemOpDelete, Namespace: &ns, Key: client.Ptr("pet")},
		{Op: api.ItemOpSearch, NamespacePrefix: ns},
	}, client.ForUser("ada"))
	if err != nil || len(res) != 3 || res[0].Item == nil || res[1].Deleted == nil || !*res[1].Deleted || len(res[2].Items) != 2 {
		t.Fatalf("batch %+v %v", res, err)
	}
	if err := c.DeleteItem(ctx, ns, key, client.ForUser("ada"), client.IfVersion(1)); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteItem(ctx, ns, key, client.ForUser("ada")); client.Code(err) != api.ErrorCodeNotFound {
		t.Fatalf("second delete: %v", err)
	}
}
