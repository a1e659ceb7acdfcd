package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/urfave/cli/v3"
)

// keysCommand manages API keys directly in the database file, so that the first
// key (and every new tenant's) can be made without a key.
func keysCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "keys",
		Usage: "create, list or revoke API keys (whether or not a server runs on the file)",
		Commands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "make a key; it is shown once",
				UsageText: "logbook keys create --tenant NAME --scope read|write|admin [--name LABEL] [--user USER_ID]",
				Description: "The key is the only thing written to stdout, so that\n" +
					"LOGBOOK_KEY=$(logbook keys create ...) captures it; its id goes to stderr.",
				Flags: []cli.Flag{
					tenantFlag("", "the tenant the key belongs to (required)"),
					&cli.StringFlag{Name: "scope", Usage: "read, write or admin (required)"},
					&cli.StringFlag{Name: "name", Usage: "a label for people"},
					&cli.StringFlag{Name: "user", Usage: "bind the key to this end user: it sees only their sessions (`USER_ID`; read or write scope)"},
				},
				Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
					return createKey(ctx, cmd, cfg, stdout, stderr)
				}),
			},
			{
				Name:  "list",
				Usage: "list the keys' ids, tenants, scopes and states (never the keys)",
				Flags: []cli.Flag{tenantFlag("", "list only this tenant's keys")},
				Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
					return listKeys(ctx, cmd, cfg, stdout)
				}),
			},
			{
				Name:      "revoke",
				Usage:     "revoke a key by its id; requests with it answer 401 from then on",
				ArgsUsage: "KEY_ID",
				Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
					return revokeKey(ctx, cmd, cfg, stdout)
				}),
			},
		},
		Action: needsSubcommand("create, list or revoke"),
	}
}

func createKey(ctx context.Context, cmd *cli.Command, cfg config, stdout, stderr io.Writer) error {
	if err := wantArgs(cmd, 0, ""); err != nil {
		return err
	}
	tenant, err := tenantArg(cmd)
	if err != nil {
		return err
	}
	scope := model.Scope(cmd.String("scope"))
	if !cmd.IsSet("scope") {
		return fmt.Errorf("%s needs --scope read|write|admin, which is required (see %s --help)", cmd.FullName(), cmd.FullName())
	}
	if !scope.Valid() {
		return fmt.Errorf("--scope must be read, write or admin")
	}
	in := model.CreateAPIKey{Scope: scope, Name: cmd.String("name")}
	if cmd.IsSet("user") {
		// The rules POST /v1/admin/keys applies to user_id.
		user := cmd.String("user")
		switch {
		case user == "" || len(user) > 128:
			return fmt.Errorf("--user must be 1 to 128 characters")
		case scope == model.ScopeAdmin:
			return fmt.Errorf("--user binds a read or write key to one end user; an admin key spans users")
		}
		in.UserID = &user
	}
	store, err := openForKeys(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	k, err := store.CreateAPIKey(ctx, tenant, in)
	if err != nil {
		return err
	}
	bound := ""
	if k.UserID != nil {
		bound = " bound to user " + *k.UserID
	}
	fmt.Fprintf(stderr, "created %s for tenant %s with scope %s%s; the key is shown this once:\n", k.ID, k.Tenant, k.Scope, bound)
	fmt.Fprintln(stdout, k.Key)
	return nil
}

func listKeys(ctx context.Context, cmd *cli.Command, cfg config, stdout io.Writer) error {
	if err := wantArgs(cmd, 0, ""); err != nil {
		return err
	}
	store, err := openForKeys(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTENANT\tSCOPE\tNAME\tCREATED\tREVOKED\tUSER")
	p := repo.PageRequest{Limit: model.MaxLimit}
	for {
		page, err := store.ListAPIKeys(ctx, cmd.String("tenant"), p)
		if err != nil {
			return err
		}
		for _, k := range page.Data {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.String()
			}
			user := "-"
			if k.UserID != nil {
				user = *k.UserID
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Scope, k.Name, k.CreatedAt, revoked, user)
		}
		if !page.HasMore {
			return tw.Flush()
		}
		p.Cursor = *page.NextCursor
	}
}

func revokeKey(ctx context.Context, cmd *cli.Command, cfg config, stdout io.Writer) error {
	if err := wantArgs(cmd, 1, "KEY_ID"); err != nil {
		return err
	}
	store, err := openForKeys(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	k, err := store.RevokeAPIKey(ctx, "", cmd.Args().First())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked %s (tenant %s) at %s\n", k.ID, k.Tenant, k.RevokedAt)
	return nil
}

// openForKeys opens an existing database file; a key written into a new, empty
// file (a mistyped --db) would be a key no server ever reads.
func openForKeys(ctx context.Context, cfg config) (repo.Store, error) {
	if err := requireDatabase(cfg, false); err != nil {
		return nil, err
	}
	return openStore(ctx, cfg, false)
}
