// Command server runs Logbook: the HTTP API over one SQLite file, plus the
// commands that work on that file (migrate, keys, export, import, backup) and
// version. `server --help` lists them; cli.go builds the command line.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "logbook:", err)
		os.Exit(1)
	}
}
