// Package pgtest starts throwaway PostgreSQL clusters for tests: initdb in a
// temporary directory, a server on a free loopback port, stopped (and the
// directory removed) when the test ends. Where PostgreSQL is not installed the
// test is skipped with a message that says so, never silently.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BinDirs are where PostgreSQL's programs are looked for, after
// LOGBOOK_PG_BIN and PATH: Debian's packages install them here.
var BinDirs = []string{"/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"}

// BinDir finds a directory with initdb, pg_ctl and pg_basebackup, or says
// where it looked.
func BinDir() (string, error) {
	// LOGBOOK_PG_BIN, when set, is the only place looked: a way to pick one of
	// several installed versions, or (set to nowhere) to see the skips.
	if d := os.Getenv("LOGBOOK_PG_BIN"); d != "" {
		if hasAll(d, "initdb", "pg_ctl", "pg_basebackup") {
			return d, nil
		}
		return "", fmt.Errorf("no initdb, pg_ctl and pg_basebackup in LOGBOOK_PG_BIN=%s", d)
	}
	dirs := []string{}
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	dirs = append(dirs, BinDirs...)
	for _, d := range dirs {
		if hasAll(d, "initdb", "pg_ctl", "pg_basebackup") {
			return d, nil
		}
	}
	return "", fmt.Errorf("no initdb, pg_ctl and pg_basebackup in LOGBOOK_PG_BIN, PATH or %s", strings.Join(BinDirs, ", "))
}

// Cluster is a running throwaway server.
type Cluster struct {
	Dir  string // the data directory
	Port int
	bin  string
	asPG bool // commands run as the postgres user (initdb refuses root)
	opts Options
}

// Options change how a cluster runs. The zero value is what Start and New
// give.
type Options struct {
	// Durable keeps PostgreSQL's own defaults, fsync and full_page_writes on,
	// where the zero value turns both off: a benchmark that sets PostgreSQL
	// beside SQLite with synchronous=FULL must pay for the same fsyncs.
	Durable bool
}

// settings are the server's -o options beyond address and socket directory.
func (o Options) settings() string {
	if o.Durable {
		return "-c fsync=on -c full_page_writes=on -c max_connections=200"
	}
	return "-c fsync=off -c full_page_writes=off -c max_connections=200"
}

// URL is a connection string for database db on the cluster.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// Start starts a cluster for t and returns it; t's cleanup stops it. The
// cluster trades durability against an OS crash for speed (fsync off); a
// killed server process still loses nothing it acknowledged.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		t.Skipf("PostgreSQL is not installed here (%v): the PostgreSQL half of this test is skipped", err)
	}
	c, err := start(bin, Options{})
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop PostgreSQL: %v", err)
		}
	})
	return c
}

// New starts a cluster outside any one test (a TestMain's, shared by a
// package's tests); the caller stops it. ErrMissing when PostgreSQL is not
// installed.
func New() (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMissing, err)
	}
	return start(bin, Options{})
}

// NewWith is New with opts.
func NewWith(opts Options) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMissing, err)
	}
	return start(bin, opts)
}

// ErrMissing: PostgreSQL is not installed here.
var ErrMissing = errors.New("PostgreSQL is not installed here")

func start(bin string, o Options) (*Cluster, error) {
	// Not t.TempDir: as root, the postgres user must be able to reach the
	// directory, and a test's temporary directories are root's alone.
	root, err := os.MkdirTemp("", "logbook-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: filepath.Join(root, "data"), bin: bin, asPG: os.Geteuid() == 0, opts: o}
	if c.asPG {
		if err := chownToPostgres(root); err != nil {
			os.RemoveAll(root)
			return nil, err
		}
	}
	if out, err := c.run("initdb", "-D", c.Dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C"); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	for try := 0; ; try++ {
		if c.Port, err = freePort(); err != nil {
			return nil, err
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s %s", c.Port, root, o.settings())
		out, err := c.run("pg_ctl", "-D", c.Dir, "-w", "-t", "60", "-l", filepath.Join(root, "log"), "-o", opts, "start")
		if err == nil {
			return c, nil
		}
		if try == 2 { // another process may have taken the port meanwhile
			log, _ := os.ReadFile(filepath.Join(root, "log"))
			os.RemoveAll(root)
			return nil, fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
		}
	}
}

// Kill stops the server at once, as kill -9 of the postmaster would leave it:
// no shutdown checkpoint, recovery on the next start.
func (c *Cluster) Kill() error {
	_, err := c.run("pg_ctl", "-D", c.Dir, "-m", "immediate", "-w", "stop")
	return err
}

// Restart starts a stopped server again on the same port.
func (c *Cluster) Restart() error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s %s", c.Port, filepath.Dir(c.Dir), c.opts.settings())
	out, err := c.run("pg_ctl", "-D", c.Dir, "-w", "-t", "60", "-l", filepath.Join(filepath.Dir(c.Dir), "log"), "-o", opts, "start")
	if err != nil {
		return fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	return nil
}

// Stop stops the server and removes its directory.
func (c *Cluster) Stop() error {
	_, err := c.run("pg_ctl", "-D", c.Dir, "-m", "immediate", "-w", "stop")
	if err != nil && !strings.Contains(err.Error(), "exit status") {
		return err
	}
	return os.RemoveAll(filepath.Dir(c.Dir))
}

func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, prog)
	var cmd *exec.Cmd
	if c.asPG {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	return cmd.CombinedOutput()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// chownToPostgres hands dir to the postgres user, whom initdb and the server
// run as when the tests run as root.
func chownToPostgres(dir string) error {
	pg, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root, PostgreSQL needs the postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	return os.Chown(dir, uid, gid)
}

func hasAll(dir string, progs ...string) bool {
	for _, p := range progs {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}
