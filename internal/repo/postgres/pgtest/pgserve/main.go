// Command pgserve starts a throwaway PostgreSQL cluster for tests that run
// outside Go (the TypeScript client's), as pgtest starts one for Go's: it
// creates -dbs databases, prints one connection URL a line, then "ready",
// and stops the cluster (removing its files) when its standard input closes
// or it is signalled. Where PostgreSQL is not installed it prints why and
// exits with status 3, so that a caller can skip rather than fail.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

func main() {
	dbs := flag.Int("dbs", 1, "how many databases to create (db1, db2, …)")
	flag.Parse()
	c, err := pgtest.New()
	if errors.Is(err, pgtest.ErrMissing) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Stop() //nolint:errcheck // best effort: the files are temporary
	if err := create(c, *dbs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		c.Stop() //nolint:errcheck
		os.Exit(1)
	}
	fmt.Println("ready")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF or an error: either way the caller is gone
		close(closed)
	}()
	select {
	case <-ctx.Done():
	case <-closed:
	}
}

// create makes the databases and prints their URLs.
func create(c *pgtest.Cluster, n int) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("db%d", i)
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return err
		}
		fmt.Println(c.URL(name))
	}
	return nil
}
