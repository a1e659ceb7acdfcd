package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one Logbook server process on a database the tool keeps between
// its restarts.
type server struct {
	bin, db string
	addr    string
	cmd     *exec.Cmd
	out     *tail
	done    chan struct{}
	waitErr error
}

// serverFlags are the flags every start passes: a batch of 1000 realistic
// messages is past the default 1 MiB body limit, and the access log at info
// would be part of what is measured.
var serverFlags = []string{"--log-level", "warn", "--max-body-bytes", "8388608", "--expiry-sweep", "0s"}

// startServer runs bin on db and waits until it answers /readyz, returning
// how long that took (the start-up time: migrations, opening the file and its
// search index).
func startServer(ctx context.Context, bin, db string, extra ...string) (*server, time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{bin: bin, db: db, addr: addr, out: &tail{}, done: make(chan struct{})}
	args := append([]string{"--addr", addr, "--db", db}, serverFlags...)
	s.cmd = exec.Command(bin, append(args, extra...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	t0 := time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	c := &http.Client{Timeout: time.Second}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Minute) // a migration of a large file may take long: it is measured
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return nil, 0, fmt.Errorf("server exited during start-up: %v\n%s", s.waitErr, s.out)
		case <-ctx.Done():
			s.stop()
			return nil, 0, ctx.Err()
		default:
		}
		if resp, err := c.Get("http://" + addr + "/readyz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, time.Since(t0), nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.stop()
	return nil, 0, fmt.Errorf("server not ready within 10 minutes\n%s", s.out)
}

func (s *server) url(path string) string { return "http://" + s.addr + path }

// stop asks the server to shut down (it drains and closes the database on
// SIGTERM), and kills it if it has not within a minute. Safe to call twice.
func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// runCLI runs one of the server binary's commands on db and returns its
// output.
func runCLI(ctx context.Context, bin, db string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, append(args, "--db", db)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("server %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// tail keeps the last few KiB written to it, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8<<10 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-8<<10:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// fileSize is a file's size in bytes, 0 when it is missing.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
