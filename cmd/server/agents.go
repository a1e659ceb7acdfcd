package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/logbook/logbook/internal/model"
)

// agentsCommand moves an agent with its memory and sessions between databases,
// straight from the database, in the format of GET /v1/agents/{id}/export.
func agentsCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "agents",
		Usage: "export or import an agent with its blocks, passages and sessions as NDJSON",
		Commands: []*cli.Command{
			agentExportCommand(stdout),
			agentImportCommand(stdout, stderr),
		},
		Action: needsSubcommand("export or import"),
	}
}

func agentExportCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write one agent, its memory and its sessions as NDJSON to stdout",
		UsageText: "logbook agents export [--tenant NAME] AGENT_ID > FILE.ndjson",
		Flags:     []cli.Flag{tenantFlag(model.DefaultTenant, "the tenant the agent belongs to")},
		Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
			if err := wantArgs(cmd, 1, "AGENT_ID"); err != nil {
				return err
			}
			tenant, err := tenantArg(cmd)
			if err != nil {
				return err
			}
			store, err := openForTransfer(ctx, cfg, false)
			if err != nil {
				return err
			}
			defer store.Close()

			w := bufio.NewWriterSize(stdout, 64<<10)
			if err := store.ExportAgent(ctx, tenant, cmd.Args().First(), w); err != nil {
				return err
			}
			return w.Flush()
		}),
	}
}

// agentImportCommand restores an agent export from FILE (or --file, or stdin)
// and prints the agent's id. Like import, it writes the database directly:
// beside a running server on the same file, POST /v1/agents/import goes
// through that server's writer.
func agentImportCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "restore an agent from an export in FILE (or on stdin) and print its id",
		UsageText: "logbook agents import [--tenant NAME] [--as-new] [--create] [FILE.ndjson] (or < FILE.ndjson)",
		Description: "It writes the database file directly. While a server runs on the same file,\n" +
			"prefer POST /v1/agents/import, which goes through that server's writer.",
		Flags: []cli.Flag{
			tenantFlag(model.DefaultTenant, "the tenant to import into"),
			&cli.BoolFlag{Name: "as-new", Usage: "give the agent and its sessions new ids"},
			&cli.StringFlag{Name: "file", TakesFile: true, Usage: "read the export from `FILE`, as the argument does"},
			createFlag(),
		},
		Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
			file := cmd.String("file")
			switch n := cmd.NArg(); {
			case n > 1:
				return fmt.Errorf("%s takes one FILE, got %d arguments: %q", cmd.FullName(), n, cmd.Args().Slice())
			case n == 1 && file != "":
				return fmt.Errorf("%s takes FILE or --file FILE, not both", cmd.FullName())
			case n == 1:
				file = cmd.Args().First()
			}
			tenant, err := tenantArg(cmd)
			if err != nil {
				return err
			}
			var in io.Reader = os.Stdin // read here, not captured earlier, so that tests can swap it
			if file != "" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			store, err := openForTransfer(ctx, cfg, cmd.Bool("create"))
			if err != nil {
				return err
			}
			defer store.Close()

			a, err := store.ImportAgent(ctx, tenant, in, model.ImportOptions{AsNew: cmd.Bool("as-new")})
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "imported agent %s (tenant %s)\n", a.ID, tenant)
			fmt.Fprintln(stdout, a.ID)
			return nil
		}),
	}
}
