package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// exportCommand writes one session as NDJSON to stdout, straight from the
// database file (the same format as GET /v1/sessions/{id}/export).
func exportCommand(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tenant := fs.String("tenant", model.DefaultTenant, "the tenant the session belongs to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("export needs one session id\n%s", usage)
	}
	if !model.ValidClientID(*tenant) {
		return fmt.Errorf("--tenant must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	}
	store, err := openForTransfer(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()

	w := bufio.NewWriterSize(stdout, 64<<10)
	if err := store.ExportSession(ctx, *tenant, fs.Arg(0), w); err != nil {
		return err
	}
	return w.Flush()
}

// importCommand restores a session from an export read from stdin (or --file)
// and prints its id. It writes the database file directly: while a server is
// running on the same file, prefer POST /v1/sessions/import, which goes through
// that server's writer.
func importCommand(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tenant := fs.String("tenant", model.DefaultTenant, "the tenant to import into")
	asNew := fs.Bool("as-new", false, "give the session, its messages and checkpoints new ids")
	file := fs.String("file", "", "read the export from this file instead of stdin")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("import reads the export from stdin (or --file) and takes no arguments\n%s", usage)
	}
	if !model.ValidClientID(*tenant) {
		return fmt.Errorf("--tenant must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	}
	var in io.Reader = os.Stdin
	if *file != "" {
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	store, err := openForTransfer(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()

	ses, err := store.ImportSession(ctx, *tenant, in, model.ImportOptions{AsNew: *asNew})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "imported session %s (tenant %s, %d messages)\n", ses.ID, *tenant, ses.MessageCount)
	fmt.Fprintln(stdout, ses.ID)
	return nil
}

// openForTransfer opens the database for a one-shot command. It does not index
// for search: a server on the file indexes imported messages in its idle time.
func openForTransfer(ctx context.Context, cfg config) (*repo.Store, error) {
	return repo.Open(ctx, repo.Config{Path: cfg.DB, Sync: cfg.Sync, Migrate: cfg.Migrate, ReadConns: 1, NoMessageIndex: true})
}
