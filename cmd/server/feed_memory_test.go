//go:build linux

// The measurement reads the server's memory from /proc.

package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// What the test holds the server to, for stalled readers of MB-sized
// messages: each reader holds one batch (256 KiB, or one event when a single
// event is larger: here one message), plus what reading it from the store
// allocated beside it until the collector runs, which --gc-percent 400 lets
// wait until the heap is five times what is live (measured: 2.9–5.2 MiB a
// reader). Memory per reader that grew with its backlog (24 messages here)
// would pass this by far: 100 readers × 24 MiB held, before the collector's
// share.
const (
	memReaders      = 100
	memMessages     = 24
	memMessageBytes = 1 << 20
	memPerReader    = 8 * memMessageBytes // the bound: one event, what reading it costs, and the collector's slack
	memSlack        = 128 << 20           // the ring, the read pool's caches
)

// TestStalledReadersHoldBoundedMemory opens 100 live feeds from the start of
// a session of 1 MiB messages on a real server process, and never reads them:
// the server must hold a bounded window per reader (docs/operations.md,
// "Live feed"), not each reader's backlog. It logs the server's RSS before and
// after, which docs/operations.md quotes.
func TestStalledReadersHoldBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process and 100 connections; skipped with -short")
	}
	runStalledReaders(t, filepath.Join(t.TempDir(), "logbook.db"))
}

// TestStalledReadersHoldBoundedMemoryPostgres is the same on PostgreSQL.
func TestStalledReadersHoldBoundedMemoryPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process and 100 connections; skipped with -short")
	}
	runStalledReaders(t, pgtest.Start(t).URL("postgres"))
}

func runStalledReaders(t *testing.T, db string) {
	bin := buildServer(t)
	srv := startServer(t, bin, db, "--max-body-bytes", strconv.Itoa(4*memMessageBytes))
	client := &http.Client{Timeout: time.Minute}
	if status, body := doJSON(t, client, "POST", srv.base+"/v1/sessions", map[string]string{"id": "big"}); status != http.StatusCreated {
		t.Fatalf("create session: %d %s", status, body)
	}
	content := strings.Repeat("m", memMessageBytes)
	for i := range memMessages {
		status, body := doJSON(t, client, "POST", srv.base+"/v1/sessions/big/messages",
			map[string]any{"role": "user", "content": fmt.Sprintf("%d %s", i, content[:len(content)-16])})
		if status != http.StatusCreated {
			t.Fatalf("append %d: %d %.200s", i, status, body)
		}
	}
	pid := srv.cmd.Process.Pid
	time.Sleep(time.Second) // let the appends' garbage go
	before := procMemory(t, pid)

	// Readers that never read, with a small receive buffer, so that the
	// kernel holds little of what the server writes and the server's own
	// holding shows.
	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	addr := strings.TrimPrefix(srv.base, "http://")
	for i := range memReaders {
		conn, err := dialer.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := fmt.Fprintf(conn, "GET /v1/sessions/big/events?after_seq=0 HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
	// The stalled readers' memory settles once each write blocks (well
	// before the 30 s write timeout cuts them).
	var after memory
	for range 8 {
		time.Sleep(time.Second)
		after = procMemory(t, pid)
	}
	srv.mustBeRunning(t)
	grew := after.peak - before.rss
	bound := int64(memReaders*memPerReader + memSlack)
	t.Logf("%d stalled readers of a session of %d × %d KiB messages: server RSS %d MiB before, %d MiB after (peak %d MiB): +%d MiB, %.1f MiB per reader; bound +%d MiB",
		memReaders, memMessages, memMessageBytes>>10, before.rss>>20, after.rss>>20, after.peak>>20, grew>>20,
		float64(grew)/memReaders/(1<<20), bound>>20)
	if grew > bound {
		t.Errorf("the server's RSS grew by %d MiB with %d stalled readers; the bound is %d MiB (%d MiB a reader and %d MiB)",
			grew>>20, memReaders, bound>>20, memPerReader>>20, memSlack>>20)
	}
}

// memory is a process's resident set now and at its peak, in bytes.
type memory struct{ rss, peak int64 }

func procMemory(t *testing.T, pid int) memory {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the server's memory: %v", err)
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch name {
		case "VmRSS":
			m.rss = n << 10
		case "VmHWM":
			m.peak = n << 10
		}
	}
	if m.rss == 0 || m.peak == 0 {
		t.Fatalf("no VmRSS or VmHWM in /proc/%d/status", pid)
	}
	return m
}
