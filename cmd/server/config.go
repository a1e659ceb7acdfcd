package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// config is everything the server reads from flags and LOGBOOK_* variables.
type config struct {
	Addr           string
	DB             string
	Sync           string
	MaxBodyBytes   int64
	ImportMaxBytes int64 // largest body of POST /v1/sessions/import
	LogLevel       string
	Migrate        bool
	RateLimit      int    // per tenant, requests per second; 0: none
	InsecureOpen   bool   // allow open mode on a non-loopback address
	SearchIndex    bool   // index messages for conversation search in idle time
	CheckpointKeep int    // checkpoints kept per session
	BackupDir      string // where POST /v1/admin/backup writes
}

// parseConfig reads flags, each with an environment twin; a flag given on the
// command line wins over its variable, and the variable over the default.
func parseConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (config, []string, error) {
	var c config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&c.Addr, "addr", env("LOGBOOK_ADDR", "127.0.0.1:8080"), "listen address (LOGBOOK_ADDR)")
	fs.StringVar(&c.DB, "db", env("LOGBOOK_DB", "data/logbook.db"), "SQLite database file; its directory is created (LOGBOOK_DB)")
	fs.StringVar(&c.Sync, "sync", env("LOGBOOK_SYNC", "full"), "full: durable on power loss; normal: faster, durable on process crash (LOGBOOK_SYNC)")
	fs.StringVar(&c.LogLevel, "log-level", env("LOGBOOK_LOG_LEVEL", "info"), "debug, info, warn or error (LOGBOOK_LOG_LEVEL)")
	maxBody := env("LOGBOOK_MAX_BODY_BYTES", "1048576")
	fs.Func("max-body-bytes", "largest request body in bytes; larger answers 413 (LOGBOOK_MAX_BODY_BYTES, default 1048576)", func(s string) error {
		maxBody = s
		return nil
	})
	importMax := env("LOGBOOK_IMPORT_MAX_BYTES", "268435456")
	fs.Func("import-max-bytes", "largest session import in bytes; larger answers 413 (LOGBOOK_IMPORT_MAX_BYTES, default 268435456)", func(s string) error {
		importMax = s
		return nil
	})
	migrate := env("LOGBOOK_MIGRATE", "true")
	fs.Func("migrate", "apply pending migrations at start (LOGBOOK_MIGRATE, default true)", func(s string) error {
		migrate = s
		return nil
	})
	rate := env("LOGBOOK_RATE_LIMIT", "0")
	fs.Func("rate-limit", "each tenant's requests per second; 0 means no limit (LOGBOOK_RATE_LIMIT, default 0)", func(s string) error {
		rate = s
		return nil
	})
	insecure := env("LOGBOOK_INSECURE_NO_AUTH", "false")
	fs.Func("insecure-no-auth", "serve without API keys on a non-loopback address (LOGBOOK_INSECURE_NO_AUTH)", func(s string) error {
		insecure = s
		return nil
	})
	fs.IntVar(&c.CheckpointKeep, "checkpoint-keep", envIntOr(getenv, "LOGBOOK_CHECKPOINT_KEEP", 100),
		"checkpoints kept per session; older ones are pruned (LOGBOOK_CHECKPOINT_KEEP)")
	fs.StringVar(&c.BackupDir, "backup-dir", env("LOGBOOK_BACKUP_DIR", ""),
		"directory that POST /v1/admin/backup writes to (LOGBOOK_BACKUP_DIR, default: backups next to the database file)")
	searchIndex := env("LOGBOOK_SEARCH_INDEX", "true")
	fs.Func("search-index", "index messages for conversation search when the writer is idle (LOGBOOK_SEARCH_INDEX, default true)", func(s string) error {
		searchIndex = s
		return nil
	})
	// Let "--insecure-no-auth" stand alone, as a boolean flag does.
	for i, a := range args {
		if a == "--insecure-no-auth" || a == "-insecure-no-auth" {
			args = append(append(args[:i:i], a+"=true"), args[i+1:]...)
		}
	}
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}

	n, err := strconv.ParseInt(maxBody, 10, 64)
	if err != nil || n < 1 {
		return c, nil, fmt.Errorf("max-body-bytes must be a positive integer, not %q", maxBody)
	}
	c.MaxBodyBytes = n
	if c.ImportMaxBytes, err = strconv.ParseInt(importMax, 10, 64); err != nil || c.ImportMaxBytes < 1 {
		return c, nil, fmt.Errorf("import-max-bytes must be a positive integer, not %q", importMax)
	}
	if c.Migrate, err = strconv.ParseBool(migrate); err != nil {
		return c, nil, fmt.Errorf("migrate must be true or false, not %q", migrate)
	}
	if c.RateLimit, err = strconv.Atoi(rate); err != nil || c.RateLimit < 0 {
		return c, nil, fmt.Errorf("rate-limit must be a non-negative integer, not %q", rate)
	}
	if c.InsecureOpen, err = strconv.ParseBool(insecure); err != nil {
		return c, nil, fmt.Errorf("insecure-no-auth must be true or false, not %q", insecure)
	}
	if c.SearchIndex, err = strconv.ParseBool(searchIndex); err != nil {
		return c, nil, fmt.Errorf("search-index must be true or false, not %q", searchIndex)
	}
	if c.CheckpointKeep < 1 {
		return c, nil, fmt.Errorf("checkpoint-keep must be at least 1, not %d", c.CheckpointKeep)
	}
	if c.BackupDir == "" {
		c.BackupDir = filepath.Join(filepath.Dir(c.DB), "backups")
	}
	c.Sync = strings.ToLower(c.Sync)
	if c.Sync != "full" && c.Sync != "normal" {
		return c, nil, fmt.Errorf("sync must be full or normal, not %q", c.Sync)
	}
	return c, fs.Args(), nil
}

// envIntOr reads an integer variable; a malformed one falls back to def here and is
// refused by the flag check, since the flag's default carries it.
func envIntOr(getenv func(string) string, key string, def int) int {
	if v, err := strconv.Atoi(getenv(key)); err == nil {
		return v
	}
	return def
}
