package main

import (
	"context"
	"fmt"
	"io"

	"github.com/logbook/logbook/internal/repo"
)

// backupCommand writes a consistent copy of the database to PATH with VACUUM INTO.
// It reads the file directly (read-only), so it works while a server is writing
// it, and it never overwrites an existing file.
func backupCommand(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	if len(args) != 1 || args[0] == "" {
		return fmt.Errorf("backup needs one PATH\n%s", usage)
	}
	b, err := repo.BackupFile(ctx, cfg.DB, args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d bytes) at %s\n", cfg.DB, b.Path, b.Bytes, b.CreatedAt)
	return nil
}
