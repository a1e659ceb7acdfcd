package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/logbook/logbook/internal/migrations"
	"github.com/pressly/goose/v3"
)

// floorCmd is the hidden sub-command that runs the floor: the least a server
// must do to answer what Logbook answers, so that Logbook's CPU can be read
// as a multiple of it (issue 21). It decodes the same message, inserts the
// same row into the same schema and indexes (the project's own migrations)
// through one writer goroutine that commits whatever is queued as one
// transaction, under Logbook's writer pragmas (WAL, synchronous=FULL, memory
// temp store, the same mmap), and answers 201 with the row; it pages and
// reads a session's context with prepared statements on a read-only pool,
// and streams NDJSON appends, each line answered in order as it commits.
// No validation beyond what SQLite checks, no idempotency, no request log,
// no search index, no usage rollups, no live feed: what is left is HTTP,
// JSON and SQLite.
const floorCmd = "floor-serve"

// floorServe runs the floor until SIGINT/SIGTERM and prints its address,
// alone on the first line of stdout, once it is listening.
func floorServe(args []string) error {
	fs := flag.NewFlagSet(floorCmd, flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite database file (created and migrated if new)")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	profile := fs.String("cpu-profile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbPath == "" {
		return errors.New("floor-serve: -db is required")
	}
	if *profile != "" {
		out, err := os.Create(*profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			out.Close()
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f, err := openFloor(ctx, *dbPath)
	if err != nil {
		return err
	}
	defer f.close()
	go f.runWriter()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: f.routes(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Println(ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// floorDSN is Logbook's writer's and readers' connection string (its
// internal/repo/sqlite dsn), pragma for pragma.
func floorDSN(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "mmap_size(268435456)")
	if readOnly {
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

type floor struct {
	wdb, rdb *sql.DB
	// The writer's statements, prepared once.
	insertMessage, updateSession, insertSession, sessionState *sql.Stmt
	// The readers'.
	page, session, compaction, after, systems, newest *sql.Stmt

	queue    chan *floorWrite
	gid      int64                    // the writer's
	sessions map[string]*floorSession // the writer's record of sessions it wrote
}

type floorSession struct {
	seq, count, tokens int64
	cost               float64
}

// floorWrite is one queued write: a session to create, or a message.
type floorWrite struct {
	session string
	create  bool
	msg     floorMessage
	done    chan error
}

func openFloor(ctx context.Context, path string) (*floor, error) {
	wdb, err := sql.Open("sqlite", floorDSN(path, false))
	if err != nil {
		return nil, err
	}
	wdb.SetMaxOpenConns(1)
	f := &floor{wdb: wdb, queue: make(chan *floorWrite, 4096), sessions: map[string]*floorSession{}}
	fail := func(err error) (*floor, error) {
		f.close()
		return nil, err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, wdb, migrations.SQLite)
	if err == nil {
		_, err = p.Up(ctx)
	}
	if err != nil {
		return fail(fmt.Errorf("migrate %s: %w", path, err))
	}
	if err := wdb.QueryRowContext(ctx, `SELECT COALESCE(MAX(gid), 0) FROM messages`).Scan(&f.gid); err != nil {
		return fail(err)
	}
	if f.rdb, err = sql.Open("sqlite", floorDSN(path, true)); err != nil {
		return fail(err)
	}
	f.rdb.SetMaxOpenConns(4)
	f.rdb.SetMaxIdleConns(4)
	for _, s := range []struct {
		db  *sql.DB
		dst **sql.Stmt
		sql string
	}{
		{wdb, &f.insertMessage, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, name, tool_calls,
			tool_call_id, agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash,
			gid, cum_tokens, cum_cost, parts, is_error, provider_item, cum_turns, in_feed)
			VALUES ('default', ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, ?, ?, ?, '{}', ?, NULL, NULL, ?, ?, ?, NULL, 0, NULL, 0, 1)`},
		{wdb, &f.updateSession, `UPDATE sessions SET message_count = ?, last_seq = ?, total_tokens = ?, total_cost = ?,
			updated_at = ?, status = 'active' WHERE tenant_id = 'default' AND id = ?`},
		{wdb, &f.insertSession, `INSERT INTO sessions (tenant_id, id, status, metadata, created_at, updated_at)
			VALUES ('default', ?, 'created', '{}', ?, ?)`},
		{wdb, &f.sessionState, `SELECT last_seq, message_count, total_tokens, total_cost FROM sessions
			WHERE tenant_id = 'default' AND id = ?`},
		{f.rdb, &f.page, `SELECT ` + floorColumns + ` FROM messages
			WHERE tenant_id = 'default' AND session_id = ? AND seq > ? ORDER BY seq LIMIT ?`},
		{f.rdb, &f.session, `SELECT last_seq FROM sessions WHERE tenant_id = 'default' AND id = ?`},
		{f.rdb, &f.compaction, `SELECT id, through_seq, summary, tokens, model, created_at FROM compactions
			WHERE tenant_id = 'default' AND session_id = ? ORDER BY n DESC LIMIT 1`},
		{f.rdb, &f.after, `SELECT ` + floorColumns + ` FROM messages
			WHERE tenant_id = 'default' AND session_id = ? AND seq > ? ORDER BY seq`},
		{f.rdb, &f.systems, `SELECT ` + floorColumns + ` FROM messages INDEXED BY messages_by_instruction
			WHERE tenant_id = 'default' AND session_id = ? AND role IN ('system', 'developer') AND seq <= ? ORDER BY seq`},
		{f.rdb, &f.newest, `SELECT ` + floorColumns + ` FROM messages
			WHERE tenant_id = 'default' AND session_id = ? AND seq > ? ORDER BY seq DESC`},
	} {
		if *s.dst, err = s.db.PrepareContext(ctx, s.sql); err != nil {
			return fail(fmt.Errorf("prepare: %w", err))
		}
	}
	return f, nil
}

func (f *floor) close() {
	if f.rdb != nil {
		f.rdb.Close()
	}
	f.wdb.Close()
}

// runWriter commits whatever is queued, up to 1000 writes, as one
// transaction, and answers each write after the commit.
func (f *floor) runWriter() {
	batch := make([]*floorWrite, 0, 1000)
	for op := range f.queue {
		batch = append(batch[:0], op)
	drain:
		for len(batch) < cap(batch) {
			select {
			case op := <-f.queue:
				batch = append(batch, op)
			default:
				break drain
			}
		}
		errs, err := f.commit(batch)
		for i, op := range batch {
			if err != nil {
				errs[i] = err
			}
			op.done <- errs[i]
		}
	}
}

var errFloorNoSession = errors.New("no such session")

func (f *floor) commit(batch []*floorWrite) ([]error, error) {
	errs := make([]error, len(batch))
	tx, err := f.wdb.Begin()
	if err != nil {
		return errs, err
	}
	defer tx.Rollback() // a no-op after Commit
	touched := map[string]*floorSession{}
	now := time.Now().UnixMilli()
	ins := tx.Stmt(f.insertMessage)
	for i, op := range batch {
		if op.create {
			if _, errs[i] = tx.Stmt(f.insertSession).Exec(op.session, now, now); errs[i] == nil {
				f.sessions[op.session] = &floorSession{}
			}
			continue
		}
		st := f.sessions[op.session]
		if st == nil {
			st = &floorSession{}
			err := tx.Stmt(f.sessionState).QueryRow(op.session).Scan(&st.seq, &st.count, &st.tokens, &st.cost)
			if errors.Is(err, sql.ErrNoRows) {
				errs[i] = errFloorNoSession
				continue
			}
			if err != nil {
				return errs, err
			}
			f.sessions[op.session] = st
		}
		m := &op.msg
		st.seq, st.count, st.tokens, st.cost = st.seq+1, st.count+1, st.tokens+m.Tokens, st.cost+m.Cost
		f.gid++
		m.Seq, m.SessionID, m.ID, m.created = st.seq, op.session, naiveID("msg_"), now
		if _, err := ins.Exec(op.session, m.Seq, m.ID, m.Role, m.Content, m.Model, m.Tokens, m.Cost, now, f.gid, st.tokens, st.cost); err != nil {
			return errs, err
		}
		touched[op.session] = st
	}
	for id, st := range touched {
		if _, err := tx.Stmt(f.updateSession).Exec(st.count, st.seq, st.tokens, st.cost, now, id); err != nil {
			return errs, err
		}
	}
	if err := tx.Commit(); err != nil {
		clear(f.sessions) // what was counted never happened
		return errs, err
	}
	return errs, nil
}

func (f *floor) write(op *floorWrite) error {
	op.done = make(chan error, 1)
	f.queue <- op
	return <-op.done
}

func (f *floor) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions", f.createSession)
	mux.HandleFunc("POST /v1/sessions/{id}/messages", f.append)
	mux.HandleFunc("GET /v1/sessions/{id}/messages", f.listMessages)
	mux.HandleFunc("GET /v1/sessions/{id}/context", f.context)
	return mux
}

// floorMessage is a message as the floor decodes and answers it, with
// Logbook's fields in Logbook's order.
type floorMessage struct {
	ID           string          `json:"id"`
	SessionID    string          `json:"session_id"`
	Seq          int64           `json:"seq"`
	Role         string          `json:"role"`
	Content      string          `json:"content"`
	Name         *string         `json:"name"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	ToolCallID   *string         `json:"tool_call_id"`
	IsError      bool            `json:"is_error"`
	AgentID      *string         `json:"agent_id"`
	Model        *string         `json:"model"`
	Tokens       int64           `json:"tokens"`
	Cost         float64         `json:"cost"`
	Metadata     json.RawMessage `json:"metadata"`
	ProviderItem json.RawMessage `json:"provider_item"`
	CreatedAt    string          `json:"created_at"`
	created      int64
}

var floorNull, floorEmpty = json.RawMessage("null"), json.RawMessage("{}")

// answer fills what the answer shows of a stored message.
func (m *floorMessage) answer() *floorMessage {
	m.ToolCalls, m.ProviderItem, m.Metadata = floorNull, floorNull, floorEmpty
	m.CreatedAt = time.UnixMilli(m.created).UTC().Format("2006-01-02T15:04:05.000Z")
	return m
}

func floorDecode(b []byte, m *floorMessage) error {
	if err := json.Unmarshal(b, m); err != nil {
		return err
	}
	switch m.Role {
	case "user", "assistant", "system", "tool":
	default:
		return errors.New("bad role")
	}
	return nil
}

func (f *floor) createSession(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil || in.ID == "" {
		http.Error(w, "bad session", http.StatusBadRequest)
		return
	}
	if err := f.write(&floorWrite{session: in.ID, create: true}); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	floorJSON(w, http.StatusCreated, map[string]string{"id": in.ID, "status": "created"})
}

func (f *floor) append(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Content-Type") == "application/x-ndjson" {
		f.appendStream(w, r)
		return
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op := &floorWrite{session: r.PathValue("id")}
	if err := floorDecode(b, &op.msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := f.write(op); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	floorJSON(w, http.StatusCreated, op.msg.answer())
}

// floorJSON answers v with its length, as Logbook does.
func floorJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// appendStream queues each line as it is read and answers each as it
// commits, in order, as Logbook's stream does.
func (f *floor) appendStream(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	session := r.PathValue("id")
	answers := make(chan *floorWrite, 64)
	go func() {
		defer close(answers)
		br := bufio.NewReaderSize(r.Body, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				op := &floorWrite{session: session, done: make(chan error, 1)}
				if derr := floorDecode(line, &op.msg); derr != nil {
					op.done <- derr
				} else {
					f.queue <- op
				}
				answers <- op
			}
			if err != nil {
				return
			}
		}
	}()
	out := bufio.NewWriterSize(w, 16<<10)
	var buf []byte
	for op := range answers {
		buf = buf[:0]
		if err := <-op.done; err != nil {
			buf = append(buf, `{"error":`...)
			buf = strconv.AppendQuote(buf, err.Error())
			buf = append(buf, '}')
		} else {
			b, _ := json.Marshal(op.msg.answer())
			buf = append(buf, b...)
		}
		_, _ = out.Write(append(buf, '\n'))
		if len(answers) == 0 {
			_ = out.Flush()
			_ = rc.Flush()
		}
	}
	_ = out.Flush()
}

// floorColumns are the message columns a read answers with.
const floorColumns = `session_id, seq, id, role, content, name, tool_calls, tool_call_id, agent_id, model,
	tokens, cost, metadata, created_at, is_error, provider_item`

func scanFloorMessages(rows *sql.Rows) ([]*floorMessage, error) {
	defer rows.Close()
	var out []*floorMessage
	for rows.Next() {
		m := &floorMessage{}
		var toolCalls, meta, item sql.NullString
		if err := rows.Scan(&m.SessionID, &m.Seq, &m.ID, &m.Role, &m.Content, &m.Name, &toolCalls, &m.ToolCallID,
			&m.AgentID, &m.Model, &m.Tokens, &m.Cost, &meta, &m.created, &m.IsError, &item); err != nil {
			return nil, err
		}
		m.answer()
		if toolCalls.Valid {
			m.ToolCalls = json.RawMessage(toolCalls.String)
		}
		if item.Valid {
			m.ProviderItem = json.RawMessage(item.String)
		}
		if meta.Valid {
			m.Metadata = json.RawMessage(meta.String)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func (f *floor) listMessages(w http.ResponseWriter, r *http.Request) {
	after, _ := strconv.ParseInt(r.URL.Query().Get("after_seq"), 10, 64)
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit < 1 || limit > 200 {
		limit = 50
	}
	rows, err := f.page.Query(r.PathValue("id"), after, limit+1)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	msgs, err := scanFloorMessages(rows)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	page := struct {
		Data       []*floorMessage `json:"data"`
		HasMore    bool            `json:"has_more"`
		NextCursor *string         `json:"next_cursor"`
	}{Data: msgs, HasMore: len(msgs) > limit}
	if page.HasMore {
		page.Data = msgs[:limit]
		c := strconv.FormatInt(msgs[limit-1].Seq, 10)
		page.NextCursor = &c
	}
	floorJSON(w, http.StatusOK, page)
}

// context is the messages after the latest compaction; with max_tokens, the
// system messages from before it and then the newest that fit beside them
// and the summary.
func (f *floor) context(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var maxTokens *int64
	if s := r.URL.Query().Get("max_tokens"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			http.Error(w, "bad max_tokens", http.StatusBadRequest)
			return
		}
		maxTokens = &n
	}
	tx, err := f.rdb.BeginTx(r.Context(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer tx.Rollback()
	type compaction struct {
		ID         string  `json:"id"`
		ThroughSeq int64   `json:"through_seq"`
		Summary    string  `json:"summary"`
		Tokens     int64   `json:"tokens"`
		Model      *string `json:"model"`
		CreatedAt  string  `json:"created_at"`
	}
	out := struct {
		SessionID  string          `json:"session_id"`
		LastSeq    int64           `json:"last_seq"`
		Compaction *compaction     `json:"compaction"`
		Messages   []*floorMessage `json:"messages"`
		Blocks     *[]any          `json:"blocks"`
		Tokens     int64           `json:"tokens"`
		MaxTokens  *int64          `json:"max_tokens"`
		OverBudget bool            `json:"over_budget"`
	}{SessionID: id, MaxTokens: maxTokens, Messages: []*floorMessage{}}
	if err := tx.Stmt(f.session).QueryRow(id).Scan(&out.LastSeq); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	var c compaction
	var created int64
	switch err := tx.Stmt(f.compaction).QueryRow(id).Scan(&c.ID, &c.ThroughSeq, &c.Summary, &c.Tokens, &c.Model, &created); {
	case err == nil:
		c.CreatedAt = time.UnixMilli(created).UTC().Format("2006-01-02T15:04:05.000Z")
		out.Compaction, out.Tokens = &c, c.Tokens
	case !errors.Is(err, sql.ErrNoRows):
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if maxTokens == nil {
		rows, err := tx.Stmt(f.after).Query(id, c.ThroughSeq)
		if err == nil {
			out.Messages, err = scanFloorMessages(rows)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for _, m := range out.Messages {
			out.Tokens += m.Tokens
		}
		floorJSON(w, http.StatusOK, out)
		return
	}
	rows, err := tx.Stmt(f.systems).Query(id, c.ThroughSeq)
	var systems []*floorMessage
	if err == nil {
		systems, err = scanFloorMessages(rows)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for _, m := range systems {
		out.Tokens += m.Tokens
	}
	rows, err = tx.Stmt(f.newest).Query(id, c.ThroughSeq)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var newest []*floorMessage
	for rows.Next() {
		m := &floorMessage{}
		var toolCalls, meta, item sql.NullString
		if err := rows.Scan(&m.SessionID, &m.Seq, &m.ID, &m.Role, &m.Content, &m.Name, &toolCalls, &m.ToolCallID,
			&m.AgentID, &m.Model, &m.Tokens, &m.Cost, &meta, &m.created, &m.IsError, &item); err != nil {
			rows.Close()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if out.Tokens+m.Tokens > *maxTokens {
			break
		}
		out.Tokens += m.Tokens
		m.answer()
		if meta.Valid {
			m.Metadata = json.RawMessage(meta.String)
		}
		newest = append(newest, m)
	}
	rows.Close()
	out.Messages = append(out.Messages, systems...)
	for i := len(newest) - 1; i >= 0; i-- {
		out.Messages = append(out.Messages, newest[i])
	}
	floorJSON(w, http.StatusOK, out)
}
