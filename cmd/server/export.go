package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/logbook/logbook/internal/repo"
	"io"
	"os"

	"github.com/logbook/logbook/internal/model"
	"github.com/urfave/cli/v3"
)

// exportCommand writes one session as NDJSON to stdout, straight from the
// database file (the same format as GET /v1/sessions/{id}/export).
func exportCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write one session, its messages and checkpoints as NDJSON to stdout",
		UsageText: "logbook export [--tenant NAME] SESSION_ID > FILE.ndjson",
		Flags:     []cli.Flag{tenantFlag(model.DefaultTenant, "the tenant the session belongs to")},
		Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
			if err := wantArgs(cmd, 1, "SESSION_ID"); err != nil {
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
			if err := store.ExportSession(ctx, tenant, cmd.Args().First(), w); err != nil {
				return err
			}
			return w.Flush()
		}),
	}
}

// importCommand restores a session from an export read from stdin (or --file)
// and prints its id. It writes the database file directly: while a server is
// running on the same file, prefer POST /v1/sessions/import, which goes through
// that server's writer.
func importCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "restore a session from an export on stdin (or --file) and print its id",
		UsageText: "logbook import [--tenant NAME] [--as-new] [--create] [--file FILE.ndjson] < FILE.ndjson",
		Description: "It writes the database file directly. While a server runs on the same file,\n" +
			"prefer POST /v1/sessions/import, which goes through that server's writer.",
		Flags: []cli.Flag{
			tenantFlag(model.DefaultTenant, "the tenant to import into"),
			&cli.BoolFlag{Name: "as-new", Usage: "give the session, its messages and checkpoints new ids"},
			&cli.StringFlag{Name: "file", TakesFile: true, Usage: "read the export from `FILE` instead of stdin"},
			createFlag(),
		},
		Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
			if err := wantArgs(cmd, 0, ""); err != nil {
				return fmt.Errorf("%w: import reads the export from stdin or --file", err)
			}
			tenant, err := tenantArg(cmd)
			if err != nil {
				return err
			}
			// os.Stdin is read here, not captured earlier, so that tests can swap it.
			var in io.Reader = os.Stdin
			if file := cmd.String("file"); file != "" {
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

			ses, err := store.ImportSession(ctx, tenant, in, model.ImportOptions{AsNew: cmd.Bool("as-new")})
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "imported session %s (tenant %s, %d messages)\n", ses.ID, tenant, ses.MessageCount)
			fmt.Fprintln(stdout, ses.ID)
			return nil
		}),
	}
}

// openForTransfer opens the database for a one-shot command. It does not index
// for search: a server on the file indexes imported messages in its idle time.
func openForTransfer(ctx context.Context, cfg config, create bool) (repo.Store, error) {
	if err := requireDatabase(cfg, create); err != nil {
		return nil, err
	}
	return openStore(ctx, cfg, false)
}
