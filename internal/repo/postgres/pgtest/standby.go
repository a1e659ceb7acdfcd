package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby makes a streaming standby of c (pg_basebackup), starts it on a
// port of its own and makes it c's synchronous standby: from then on a commit
// on c returns only once the standby has flushed it, so a failover to the
// standby loses nothing that was acknowledged. The caller stops it.
func (c *Cluster) StartStandby(ctx context.Context) (*Cluster, error) {
	root, err := os.MkdirTemp("", "logbook-pg-standby-")
	if err != nil {
		return nil, err
	}
	s := &Cluster{Dir: filepath.Join(root, "data"), bin: c.bin, asPG: c.asPG}
	if s.asPG {
		if err := chownToPostgres(root); err != nil {
			os.RemoveAll(root)
			return nil, err
		}
	}
	if out, err := s.run("pg_basebackup", "-h", "127.0.0.1", "-p", fmt.Sprint(c.Port), "-U", "postgres",
		"-D", s.Dir, "-R", "-X", "stream", "--no-sync", "-c", "fast"); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("pg_basebackup: %v: %s", err, out)
	}
	if s.Port, err = freePort(); err != nil {
		return nil, err
	}
	if err := s.Restart(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	// The standby must be streaming before it is made synchronous, or every
	// commit on the primary would wait for it.
	if err := c.exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`); err != nil {
		return s, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		err := c.queryRow(ctx, `SELECT sync_state FROM pg_stat_replication LIMIT 1`, &state)
		if err == nil && state == "sync" {
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("the standby did not become synchronous (state %q, %v)", state, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Promote turns a standby into a primary that accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	if out, err := c.run("pg_ctl", "-D", c.Dir, "-w", "promote"); err != nil {
		return fmt.Errorf("pg_ctl promote: %v: %s", err, out)
	}
	return nil
}

func (c *Cluster) exec(ctx context.Context, stmts ...string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", strings.Fields(s)[0], err)
		}
	}
	return nil
}

func (c *Cluster) queryRow(ctx context.Context, q string, dst ...any) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, q).Scan(dst...)
}
