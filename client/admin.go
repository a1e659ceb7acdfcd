package client

import (
	"context"
	"iter"

	"github.com/logbook/logbook/client/api"
)

// What an operator calls: health, keys, purges, integrity, the tenant's
// embedding endpoint, backups (the long ones as jobs, jobs.go) and usage. The admin routes need a key of
// admin scope. Each returns a *Problem for any non-2xx answer.

// GetHealth answers whether the process is up, with its version.
func (c *Client) GetHealth(ctx context.Context) (*api.Health, error) {
	return decode[api.Health](c.raw.GetHealth(ctx))
}

// GetReadiness answers whether the server can serve: its database answers
// (a *Problem with status 503 when it does not).
func (c *Client) GetReadiness(ctx context.Context) (*api.Health, error) {
	return decode[api.Health](c.raw.GetReadiness(ctx))
}

// GetWhoAmI answers who the client's key acts as: its tenant, scope, id
// and the end user it is bound to (OpenMode with no key), so that a caller
// offers only what the key may do.
func (c *Client) GetWhoAmI(ctx context.Context) (*api.Identity, error) {
	return decode[api.Identity](c.raw.GetWhoAmI(ctx))
}

// CreateAPIKey makes a key of the caller's tenant; its secret (Key) is
// answered this once. A key with in.UserID sees only that end user's
// sessions. A retry after a lost answer makes no second key: it is a
// *Problem with code idempotency_applied (list the keys and revoke the one
// made).
func (c *Client) CreateAPIKey(ctx context.Context, in api.APIKeyCreate) (*api.NewAPIKey, error) {
	return decode[api.NewAPIKey](c.raw.CreateAPIKey(ctx, nil, in))
}

// ListAPIKeys walks the tenant's keys (never their secrets).
func (c *Client) ListAPIKeys(ctx context.Context, params *api.ListAPIKeysParams) iter.Seq2[api.APIKey, error] {
	p := deref(params)
	return list[api.APIKey](p.Cursor, func(cursor *string) (*page[api.APIKey], error) {
		p.Cursor = cursor
		return decode[page[api.APIKey]](c.raw.ListAPIKeys(ctx, &p))
	})
}

// RevokeAPIKey revokes a key at once.
func (c *Client) RevokeAPIKey(ctx context.Context, keyID string) error {
	return noContent(c.raw.RevokeAPIKey(ctx, keyID))
}

// PurgeSessions erases, for good, the tenant's sessions in in.Status not
// updated since in.OlderThan (or, with in.DryRun, counts them), in bounded
// batches. A purge that outlasts the server's wait is waited out as a job
// (see [Client.GetJob]), until ctx ends.
func (c *Client) PurgeSessions(ctx context.Context, in api.PurgeRequest) (*api.PurgeResult, error) {
	resp, err := c.raw.PurgeSessions(ctx, nil, in)
	return awaitJob[api.PurgeResult](ctx, c, resp, err)
}

// CheckIntegrity checks the database file and the tenant's counters and
// search index (with params.Repair "counters", it first repairs the
// counters that drifted). A check that outlasts the server's wait is waited
// out as a job (see [Client.GetJob]), until ctx ends.
func (c *Client) CheckIntegrity(ctx context.Context, params *api.CheckIntegrityParams) (*api.IntegrityReport, error) {
	resp, err := c.raw.CheckIntegrity(ctx, params)
	return awaitJob[api.IntegrityReport](ctx, c, resp, err)
}

// GetTenantEmbedding reads the tenant's embedding endpoint.
func (c *Client) GetTenantEmbedding(ctx context.Context) (*api.TenantEmbedding, error) {
	return decode[api.TenantEmbedding](c.raw.GetTenantEmbedding(ctx))
}

// PutTenantEmbedding sets the embedding endpoint of the tenant's agents that
// name none (under one of the server's --embedding-allowed-urls).
func (c *Client) PutTenantEmbedding(ctx context.Context, in api.EmbeddingConfig) (*api.TenantEmbedding, error) {
	return decode[api.TenantEmbedding](c.raw.PutTenantEmbedding(repeatable(ctx), in))
}

// DeleteTenantEmbedding removes the tenant's embedding endpoint.
func (c *Client) DeleteTenantEmbedding(ctx context.Context) error {
	return noContent(c.raw.DeleteTenantEmbedding(ctx))
}

// BackupDatabase writes a consistent copy of the whole database into the
// server's backup directory, named in.Name (by default
// logbook-<UTC time>.db). Only an admin key of the tenant default may. A
// backup that outlasts the server's wait is waited out as a job (see
// [Client.GetJob]), until ctx ends.
func (c *Client) BackupDatabase(ctx context.Context, in api.BackupRequest) (*api.Backup, error) {
	resp, err := c.raw.BackupDatabase(ctx, nil, in)
	return awaitJob[api.Backup](ctx, c, resp, err)
}

// GetUsage sums the tenant's tokens and cost over UTC days, grouped by
// params.GroupBy (day, agent, model or session).
func (c *Client) GetUsage(ctx context.Context, params *api.GetUsageParams) (*api.Usage, error) {
	return decode[api.Usage](c.raw.GetUsage(ctx, params))
}
