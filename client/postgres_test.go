package client_test

import (
	"bufio"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startPostgres starts a throwaway PostgreSQL cluster with one database
// through the repository's pgserve (the client module cannot import the
// server's test helpers), stopped when the test ends, and answers its URL.
// Where PostgreSQL is not installed the test is skipped, saying why.
func startPostgres(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pgserve")
	build := exec.Command("go", "build", "-o", bin, "./internal/repo/postgres/pgtest/pgserve")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pgserve: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-dbs", "1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	// Closing its standard input stops the cluster and removes its files.
	t.Cleanup(func() {
		stdin.Close()
		for range lines {
		}
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	var url string
	for l := range lines {
		switch {
		case strings.HasPrefix(l, "postgres://"):
			url = l
		case l == "ready":
			return url
		}
	}
	err = <-exited
	exited <- err
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skipf("PostgreSQL is not installed here: %s", strings.TrimSpace(stderr.String()))
	}
	t.Fatalf("pgserve: %v\n%s", err, stderr.String())
	return ""
}
