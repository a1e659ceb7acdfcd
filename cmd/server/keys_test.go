package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, envOf(), &out, io.Discard)
	return out.String(), err
}

func get(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestKeysCommandsAndAuth(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	base, stop := runInProcess(t, []string{"--db", db, "--addr", "127.0.0.1:0"}, envOf())
	if got := get(t, base+"/v1/sessions", ""); got != http.StatusOK {
		t.Fatalf("open mode on loopback: %d, want 200", got)
	}

	// The CLI writes the same file while the server runs.
	out, err := runCLI(t, "--db", db, "keys", "create", "--tenant", "acme", "--scope", "write", "--name", "runtime")
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(out)
	if !strings.HasPrefix(key, "lb_") || len(key) != 84 {
		t.Fatalf("keys create printed %q", out)
	}
	list, err := runCLI(t, "--db", db, "keys", "list")
	if err != nil || !strings.Contains(list, "acme") || !strings.Contains(list, "write") || strings.Contains(list, key) {
		t.Fatalf("keys list: %v\n%s", err, list)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]

	// The server sees the new key within its open-mode cache time (1s).
	deadline := 0
	for get(t, base+"/v1/sessions", "") != http.StatusUnauthorized {
		if deadline++; deadline > 40 {
			t.Fatal("open mode did not end after a key was created")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := get(t, base+"/v1/sessions", key); got != http.StatusOK {
		t.Fatalf("with the key: %d", got)
	}
	if _, err := runCLI(t, "--db", db, "keys", "revoke", id); err != nil {
		t.Fatal(err)
	}
	if got := get(t, base+"/v1/sessions", key); got != http.StatusUnauthorized {
		t.Fatalf("revoked key: %d, want 401", got)
	}
	// With every key revoked the running server still demands one...
	time.Sleep(1100 * time.Millisecond)
	if got := get(t, base+"/v1/sessions", ""); got != http.StatusUnauthorized {
		t.Fatalf("no key after the last one was revoked: %d, want 401", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// ...and a restart is how an operator goes back to open mode.
	base, stop = runInProcess(t, []string{"--db", db, "--addr", "127.0.0.1:0"}, envOf())
	if got := get(t, base+"/v1/sessions", ""); got != http.StatusOK {
		t.Fatalf("restarted with every key revoked: %d, want 200 (open mode)", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	for _, bad := range [][]string{
		{"keys", "create", "--tenant", "acme", "--scope", "root"},
		{"keys", "create", "--tenant", "has space", "--scope", "read"},
		{"keys", "revoke", "key_nope"},
		{"keys", "frob"},
	} {
		if _, err := runCLI(t, append([]string{"--db", db}, bad...)...); err == nil {
			t.Errorf("%v succeeded", bad)
		}
	}
}

func TestOpenModeRefusedOffLoopback(t *testing.T) {
	db := filepath.Join(t.TempDir(), "l.db")
	err := run(context.Background(), []string{"--db", db, "--addr", "0.0.0.0:0"}, envOf(), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "insecure-no-auth") {
		t.Fatalf("err = %v, want a refusal naming --insecure-no-auth", err)
	}
	_, stop := runInProcess(t, []string{"--db", db, "--addr", "0.0.0.0:0", "--insecure-no-auth"}, envOf())
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// With a key, a public address needs no flag.
	if _, err := runCLI(t, "--db", db, "keys", "create", "--tenant", "t", "--scope", "admin"); err != nil {
		t.Fatal(err)
	}
	_, stop = runInProcess(t, []string{"--db", db, "--addr", "0.0.0.0:0"}, envOf())
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// keys create --user binds the key to one end user, as user_id on POST
// /v1/admin/keys does: it makes sessions of that user and no other's.
func TestKeysCreateBoundToUser(t *testing.T) {
	db := newDB(t)
	for _, args := range [][]string{
		{"--scope", "admin", "--user", "ann"},
		{"--scope", "write", "--user", ""},
		{"--scope", "write", "--user", strings.Repeat("a", 129)},
	} {
		stdout, _, err := runEnv(t, envOf(), append([]string{"--db", db, "keys", "create", "--tenant", "acme"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "--user") || stdout != "" {
			t.Errorf("keys create %v: err = %v, stdout = %q; want a refusal naming --user", args, err, stdout)
		}
	}
	if list, _, _ := runEnv(t, envOf(), "--db", db, "keys", "list"); strings.Count(list, "\n") != 1 {
		t.Fatalf("a refused keys create made a key:\n%s", list)
	}

	stdout, stderr, err := runEnv(t, envOf(), "--db", db, "keys", "create", "--tenant", "acme", "--scope", "write", "--user", "ann")
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(stdout)
	if !strings.HasPrefix(key, "lb_") || !strings.Contains(stderr, "bound to user ann") {
		t.Fatalf("keys create --user: stdout %q, stderr %q", stdout, stderr)
	}
	list, _, err := runEnv(t, envOf(), "--db", db, "keys", "list")
	if err != nil || !strings.Contains(list, "USER") || !strings.HasSuffix(strings.TrimSpace(list), "ann") {
		t.Fatalf("keys list does not show the user: %v\n%s", err, list)
	}

	base, stop := runInProcess(t, []string{"--db", db, "--addr", "127.0.0.1:0"}, envOf())
	defer stop()
	post := func(body string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/sessions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := post(`{"id": "a1", "user_id": "ann"}`); got != http.StatusCreated {
		t.Errorf("ann's key making ann's session: %d, want 201", got)
	}
	if got := post(`{"id": "b1", "user_id": "bob"}`); got != http.StatusForbidden {
		t.Errorf("ann's key making bob's session: %d, want 403", got)
	}
}
