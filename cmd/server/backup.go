package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/urfave/cli/v3"
)

// backupCommand writes a consistent copy of the database to PATH (sqlite.BackupFile).
// It reads the file directly (read-only), so it works while a server is writing
// it, and it never overwrites an existing file.
func backupCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "write a consistent copy of the database to PATH (safe while serving)",
		ArgsUsage: "PATH",
		Description: "The copy is made with SQLite's online backup over a read-only connection, from\n" +
			"one read transaction and paced, so a running server goes on writing meanwhile.\n" +
			"An existing PATH is never overwritten.\n" +
			"A PATH that starts with - would read as a flag: put it after --.",
		Action: withConfig(func(ctx context.Context, cmd *cli.Command, cfg config) error {
			if err := wantArgs(cmd, 1, "PATH"); err != nil {
				return err
			}
			path := cmd.Args().First()
			if path == "" {
				return fmt.Errorf("%s needs a PATH that is not empty", cmd.FullName())
			}
			if isPostgres(cfg.DB) {
				return pgDump(ctx, cfg.DB, path, stdout)
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

// pgDump backs a PostgreSQL database up the way PostgreSQL does, with
// pg_dump, and says the command it ran (without the password).
func pgDump(ctx context.Context, url, path string, stdout io.Writer) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists: a backup never overwrites a file", path)
	}
	shown := "pg_dump --format=custom --file=" + path + " '" + displayDB(url) + "'"
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
		if len(matches) == 0 {
			return fmt.Errorf("this database is PostgreSQL: back it up with pg_dump, which is not installed here; run: %s", shown)
		}
		bin = matches[len(matches)-1]
	}
	out, err := exec.CommandContext(ctx, bin, "--format=custom", "--file="+path, url).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", shown, err, out)
	}
	fmt.Fprintf(stdout, "backed up with: %s\n", shown)
	return nil
}
