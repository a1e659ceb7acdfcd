package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// prepareTenants makes the database db and one write key per tenant with the
// server binary's own commands, before any server runs on it. A server that
// starts with no key serves every request in open mode, as the one tenant
// "default", so two tenants need their keys to exist first. It returns the keys
// in the order of tenants.
func prepareTenants(ctx context.Context, binary, db string, tenants ...string) ([]string, error) {
	if _, err := serverCommand(ctx, binary, "--db", db, "migrate", "up", "--create"); err != nil {
		return nil, err
	}
	keys := make([]string, len(tenants))
	for i, t := range tenants {
		// keys create prints the key, and only the key, on stdout.
		out, err := serverCommand(ctx, binary, "--db", db, "keys", "create", "--tenant", t, "--scope", "write")
		if err != nil {
			return nil, err
		}
		if keys[i] = strings.TrimSpace(out); keys[i] == "" || strings.ContainsAny(keys[i], " \n") {
			return nil, fmt.Errorf("keys create --tenant %s printed %q, want one key", t, out)
		}
	}
	return keys, nil
}

// serverCommand runs one of the server binary's commands and returns its stdout.
func serverCommand(ctx context.Context, binary string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", binary, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.String(), nil
}
