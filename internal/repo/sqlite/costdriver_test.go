package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"

	"modernc.org/sqlite"
)

// costRecorder sits between the store and the driver (Config.connect) and
// records what each connection runs: every statement executed, every
// statement prepared (a text statement run through ExecContext or
// QueryContext is prepared for that one run, and counts as both), and each
// commit with the WAL frames it wrote, as SQLite counts them itself
// (SQLITE_DBSTATUS_CACHE_WRITE: pages the pager wrote, which in WAL mode are
// the frames appended to the log).
type costRecorder struct {
	mu     sync.Mutex
	events []costEvent
}

type costEvent struct {
	role   string // "writer", "reader" or "checkpointer"
	kind   string // "prepare", "exec", "commit" or "rollback"
	sql    string // prepare, exec: the statement, blanks collapsed
	frames int    // commit: WAL frames written
}

func (r *costRecorder) add(e costEvent) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// mark is where the record stands; since returns what came after a mark.
func (r *costRecorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *costRecorder) since(m int) []costEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]costEvent(nil), r.events[m:]...)
}

func (r *costRecorder) connect(dsn string) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	role := "checkpointer"
	switch {
	case strings.Contains(dsn, "wal_autocheckpoint(0)"):
		role = "writer"
	case strings.Contains(dsn, "mode=ro"):
		role = "reader"
	}
	return costConnector{Connector: base, r: r, role: role}, nil
}

type costConnector struct {
	driver.Connector
	r    *costRecorder
	role string
}

func (c costConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &costConn{inner: conn, r: c.r, role: c.role}, nil
}

// costConn offers what the driver's connections offer, so that database/sql
// takes the same paths through it.
type costConn struct {
	inner driver.Conn
	r     *costRecorder
	role  string
}

func collapse(q string) string { return strings.Join(strings.Fields(q), " ") }

func (c *costConn) note(kind, q string) {
	c.r.add(costEvent{role: c.role, kind: kind, sql: collapse(q)})
}

func (c *costConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c *costConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st, err := c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c.note("prepare", q)
	return &costStmt{inner: st, c: c, sql: q}, nil
}

func (c *costConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.note("prepare", q)
	c.note("exec", q)
	return c.inner.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *costConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.note("prepare", q)
	c.note("exec", q)
	return c.inner.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *costConn) Close() error { return c.inner.Close() }

func (c *costConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *costConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	status, ok := c.inner.(sqlite.DBStatus)
	if !ok {
		return nil, errors.New("cost recorder: the driver's connection has no DBStatus")
	}
	if _, _, err := status.Status(sqlite.DBStatusCacheWrite, true); err != nil { // from zero for this transaction
		return nil, err
	}
	tx, err := c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &costTx{inner: tx, c: c, status: status}, nil
}

func (c *costConn) Ping(ctx context.Context) error { return c.inner.(driver.Pinger).Ping(ctx) }

func (c *costConn) ResetSession(ctx context.Context) error {
	return c.inner.(driver.SessionResetter).ResetSession(ctx)
}

func (c *costConn) IsValid() bool { return c.inner.(driver.Validator).IsValid() }

type costTx struct {
	inner  driver.Tx
	c      *costConn
	status sqlite.DBStatus
}

func (t *costTx) Commit() error {
	if err := t.inner.Commit(); err != nil {
		return err
	}
	frames, _, err := t.status.Status(sqlite.DBStatusCacheWrite, true)
	t.c.r.add(costEvent{role: t.c.role, kind: "commit", frames: frames})
	return err
}

func (t *costTx) Rollback() error {
	t.c.r.add(costEvent{role: t.c.role, kind: "rollback"})
	return t.inner.Rollback()
}

type costStmt struct {
	inner driver.Stmt
	c     *costConn
	sql   string
}

func (s *costStmt) Close() error  { return s.inner.Close() }
func (s *costStmt) NumInput() int { return s.inner.NumInput() }

func (s *costStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.c.note("exec", s.sql)
	//lint:ignore SA1019 driver.Stmt requires it: the driver's own fallback
	return s.inner.Exec(args)
}

func (s *costStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.c.note("exec", s.sql)
	//lint:ignore SA1019 driver.Stmt requires it: the driver's own fallback
	return s.inner.Query(args)
}

func (s *costStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.c.note("exec", s.sql)
	return s.inner.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *costStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.note("exec", s.sql)
	return s.inner.(driver.StmtQueryContext).QueryContext(ctx, args)
}
