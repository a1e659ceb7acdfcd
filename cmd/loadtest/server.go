package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one server process under test, on its own fresh database.
type server struct {
	name string
	addr string // host:port on 127.0.0.1
	// health is the path that answers 200 once the server serves; "" is
	// Logbook's /healthz.
	health string
	pid    int
	dir    string // holds the database; removed by stop

	cmd     *exec.Cmd
	out     *tail
	done    chan struct{} // closed once the process has exited
	waitErr error
}

// logbookDB is the database file's name in a Logbook server's directory.
const logbookDB = "logbook.db"

// startLogbook runs the server binary under test on a fresh database with
// synchronous=FULL. Its log level is warn: the access log line per request is at
// info and would otherwise be part of what is measured.
func startLogbook(ctx context.Context, binary, tmp, name string, flags ...string) (*server, error) {
	dir, err := os.MkdirTemp(tmp, name+"-")
	if err != nil {
		return nil, err
	}
	s, err := startLogbookIn(ctx, binary, dir, name, flags...)
	if err != nil {
		os.RemoveAll(dir)
	}
	return s, err
}

// startLogbookIn is startLogbook on dir/logbook.db, which the caller may have
// prepared (schema, API keys) with the binary's own commands. The server owns dir
// from then on (stop removes it); if it does not start, dir is the caller's to
// remove.
//
// At warn the server does not print its "listening" line, so the tool picks a free
// port itself and waits for /healthz. Another process could take the port in the
// moment between; the tool then tries again with another.
func startLogbookIn(ctx context.Context, binary, dir, name string, flags ...string) (*server, error) {
	return startLogbookDB(ctx, binary, dir, filepath.Join(dir, logbookDB), name, flags...)
}

// startLogbookOn is startLogbook on the database db, a PostgreSQL URL, which
// other servers may share; its own directory stays empty.
func startLogbookOn(ctx context.Context, binary, tmp, db, name string, flags ...string) (*server, error) {
	dir, err := os.MkdirTemp(tmp, name+"-")
	if err != nil {
		return nil, err
	}
	s, err := startLogbookDB(ctx, binary, dir, db, name, flags...)
	if err != nil {
		os.RemoveAll(dir)
	}
	return s, err
}

// startLogbookDB is startLogbookIn with --db db, a file in dir or a URL.
func startLogbookDB(ctx context.Context, binary, dir, db, name string, flags ...string) (*server, error) {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := start(name, dir, binary, nil, append([]string{"--addr", addr, "--db", db,
			"--sync", "full", "--log-level", "warn"}, flags...)...)
		if err != nil {
			return nil, err
		}
		s.addr = addr
		if last = s.waitHealthy(ctx); last == nil {
			return s, nil
		}
		s.halt() // not stop: the next attempt serves the same directory
		if !strings.Contains(s.out.String(), "address already in use") {
			break
		}
	}
	return nil, last
}

// startNaive re-executes this tool as the naive baseline server, which prints the
// address it got from the kernel.
func startNaive(ctx context.Context, self, tmp, name string, maxConns int) (*server, error) {
	dir, err := os.MkdirTemp(tmp, name+"-")
	if err != nil {
		return nil, err
	}
	return startSelf(ctx, self, dir, name, naiveCmd, "-db", filepath.Join(dir, "naive.db"), "-addr", "127.0.0.1:0",
		"-max-conns", strconv.Itoa(maxConns))
}

// startFloor re-executes this tool as the floor (floor.go) on a fresh
// database.
func startFloor(ctx context.Context, self, tmp, name string) (*server, error) {
	dir, err := os.MkdirTemp(tmp, name+"-")
	if err != nil {
		return nil, err
	}
	return startSelf(ctx, self, dir, name, floorCmd, "-db", filepath.Join(dir, "floor.db"), "-addr", "127.0.0.1:0")
}

// startFloorOn runs the floor on a copy of a Logbook server's database, made
// while it serves (its backup command: VACUUM INTO), so that the floor reads
// the very rows Logbook reads.
func startFloorOn(ctx context.Context, self, serverBin string, lb *server, name string) (*server, error) {
	dir, err := os.MkdirTemp(filepath.Dir(lb.dir), name+"-")
	if err != nil {
		return nil, err
	}
	db := filepath.Join(dir, "floor.db")
	out, err := exec.CommandContext(ctx, serverBin, "--db", filepath.Join(lb.dir, logbookDB), "backup", db).CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("copy %s's database for the floor: %v: %s", lb.name, err, out)
	}
	return startSelf(ctx, self, dir, name, floorCmd, "-db", db, "-addr", "127.0.0.1:0")
}

// startSelf re-executes this tool with args in dir, a server that prints the
// address it got from the kernel; stop removes dir, and so does a failure.
func startSelf(ctx context.Context, self, dir, name string, args ...string) (*server, error) {
	addrc := make(chan string, 1)
	s, err := start(name, dir, self, func(line string) {
		if _, _, err := net.SplitHostPort(line); err == nil {
			select {
			case addrc <- line:
			default:
			}
		}
	}, args...)
	if err != nil {
		return nil, err
	}
	select {
	case s.addr = <-addrc:
		return s, nil
	case <-s.done:
		err = fmt.Errorf("%s exited before listening: %v\n%s", name, s.waitErr, s.out)
	case <-time.After(15 * time.Second):
		err = fmt.Errorf("%s did not print its address within 15s\n%s", name, s.out)
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.stop()
	return nil, err
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// start runs binary with args, passing each line it prints on stdout to onLine
// (when not nil) and keeping the end of its output for error messages.
func start(name, dir, binary string, onLine func(string), args ...string) (*server, error) {
	cmd := exec.Command(binary, args...)
	dieWithParent(cmd)
	s := &server{name: name, dir: dir, cmd: cmd, out: &tail{}, done: make(chan struct{})}
	cmd.Stderr = s.out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s.pid = cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(s.out, sc.Text())
			if onLine != nil {
				onLine(strings.TrimSpace(sc.Text()))
			}
		}
		// Wait must not run before the pipe is drained, or it may cut the output.
		_, _ = io.Copy(io.Discard, stdout)
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

func (s *server) waitHealthy(ctx context.Context) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	health := s.health
	if health == "" {
		health = "/healthz"
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("%s exited during start-up: %v\n%s", s.name, s.waitErr, s.out)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := c.Get("http://" + s.addr + health); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s not healthy within 15s\n%s", s.name, s.out)
}

// stop halts the process and removes its database. It is safe to call more than
// once.
func (s *server) stop() {
	s.halt()
	os.RemoveAll(s.dir)
}

// halt asks the process to shut down (both servers drain and close their
// database on SIGTERM) and kills it if it has not gone within 15s.
func (s *server) halt() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
}

// exitedEarly reports an unexpected exit, which would make every figure of the
// round meaningless.
func (s *server) exitedEarly() error {
	select {
	case <-s.done:
		return fmt.Errorf("%s exited during the round: %v\n%s", s.name, s.waitErr, s.out)
	default:
		return nil
	}
}

// tail keeps the last few KiB written to it, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
