package main

import (
	"context"
	"fmt"
	"io"

	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/urfave/cli/v3"
)

// backupCommand writes a consistent copy of the database to PATH with VACUUM INTO.
// It reads the file directly (read-only), so it works while a server is writing
// it, and it never overwrites an existing file.
func backupCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "write a consistent copy of the database to PATH (safe while serving)",
		ArgsUsage: "PATH",
		Description: "The copy is made with VACUUM INTO over a read-only connection, so a running\n" +
			"server goes on writing meanwhile. An existing PATH is never overwritten.\n" +
			"A PATH that starts with - would read as a flag: put it after --.",
		Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
			if err := wantArgs(cmd, 1, "PATH"); err != nil {
				return err
			}
			path := cmd.Args().First()
			if path == "" {
				return fmt.Errorf("%s needs a PATH that is not empty", cmd.FullName())
			}
			if err := requireDatabase(cfg, false); err != nil {
				return err
			}
			b, err := sqlite.BackupFile(ctx, cfg.DB, path)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "backed up %s to %s (%d bytes) at %s\n", cfg.DB, b.Path, b.Bytes, b.CreatedAt)
			return nil
		}),
	}
}
