package main

import (
	"context"
	"github.com/logbook/logbook/internal/repo/postgres"
	"io"

	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/urfave/cli/v3"
)

// migrateCommand runs the embedded migrations by hand, for operators who serve
// with --migrate=false and upgrade the schema as a separate step.
func migrateCommand(stdout io.Writer) *cli.Command {
	step := func(name, usage string, canCreate bool) *cli.Command {
		c := &cli.Command{Name: name, Usage: usage}
		if canCreate {
			c.Flags = []cli.Flag{createFlag()}
		}
		c.Action = withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
			if err := wantArgs(cmd, 0, ""); err != nil {
				return err
			}
			if err := requireDatabase(cfg, canCreate && cmd.Bool("create")); err != nil {
				return err
			}
			if isPostgres(cfg.DB) {
				return postgres.Migrate(ctx, cfg.DB, name, stdout)
			}
			return sqlite.Migrate(ctx, cfg.DB, name, stdout)
		})
		return c
	}
	return &cli.Command{
		Name:  "migrate",
		Usage: "show, apply or roll back the schema migrations embedded in this binary",
		Commands: []*cli.Command{
			step("status", "list the migrations and when each was applied", false),
			step("up", "apply every pending migration", true),
			step("down", "roll back the newest applied migration", false),
		},
		Action: needsSubcommand("status, up or down"),
	}
}
