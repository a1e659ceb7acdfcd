// Command server is the source of the logbook binary (make build writes
// bin/logbook): the HTTP API over SQLite or PostgreSQL, plus the commands that
// work on that database (migrate, keys, export, import, agents, backup) and
// version. `logbook --help` lists them; cli.go builds the command line.
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
