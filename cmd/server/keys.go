package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// keysCommand manages API keys directly in the database file, so that the first
// key (and every new tenant's) can be made without a key.
func keysCommand(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("keys needs create, list or revoke\n%s", usage)
	}
	store, err := repo.Open(ctx, repo.Config{Path: cfg.DB, Sync: cfg.Sync, Migrate: cfg.Migrate, ReadConns: 1})
	if err != nil {
		return err
	}
	defer store.Close()

	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	tenant := fs.String("tenant", "", "the tenant the key belongs to")
	switch args[0] {
	case "create":
		scope := fs.String("scope", "", "read, write or admin")
		name := fs.String("name", "", "a label for people")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if !model.ValidClientID(*tenant) {
			return fmt.Errorf("--tenant must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
		}
		if !model.Scope(*scope).Valid() {
			return fmt.Errorf("--scope must be read, write or admin")
		}
		k, err := store.CreateAPIKey(ctx, *tenant, model.CreateAPIKey{Scope: model.Scope(*scope), Name: *name})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "created %s for tenant %s with scope %s; the key is shown this once:\n", k.ID, k.Tenant, k.Scope)
		fmt.Fprintln(stdout, k.Key)
		return nil
	case "list":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTENANT\tSCOPE\tNAME\tCREATED\tREVOKED")
		p := repo.PageRequest{Limit: model.MaxLimit}
		for {
			page, err := store.ListAPIKeys(ctx, *tenant, p)
			if err != nil {
				return err
			}
			for _, k := range page.Data {
				revoked := "-"
				if k.RevokedAt != nil {
					revoked = k.RevokedAt.String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Scope, k.Name, k.CreatedAt, revoked)
			}
			if !page.HasMore {
				return tw.Flush()
			}
			p.Cursor = *page.NextCursor
		}
	case "revoke":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("keys revoke needs one key id")
		}
		k, err := store.RevokeAPIKey(ctx, "", fs.Arg(0))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s (tenant %s) at %s\n", k.ID, k.Tenant, k.RevokedAt)
		return nil
	}
	return fmt.Errorf("unknown keys command %q\n%s", args[0], usage)
}
