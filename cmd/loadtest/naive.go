package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// naiveCmd is the hidden sub-command that runs the baseline server: the tool
// re-executes itself with it, so the baseline is a separate process whose CPU can
// be read from /proc exactly like Logbook's.
const naiveCmd = "naive-serve"

// naiveServe runs the baseline until SIGINT/SIGTERM and prints its address, alone
// on the first line of stdout, once it is listening.
func naiveServe(args []string) error {
	fs := flag.NewFlagSet(naiveCmd, flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite database file")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	maxConns := fs.Int("max-conns", 0, "connection pool size; 0 keeps database/sql's defaults")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbPath == "" {
		return errors.New("naive-serve: -db is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	db, err := openSQLite(ctx, *dbPath, true)
	if err != nil {
		return err
	}
	defer db.Close()
	if *maxConns > 0 {
		db.SetMaxOpenConns(*maxConns)
		db.SetMaxIdleConns(*maxConns)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newNaiveHandler(db), ReadHeaderTimeout: 10 * time.Second}
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

// naiveHandler is what a straightforward implementation of the two write routes
// looks like: net/http, database/sql with its default pool, SQL strings run as
// they are, and one durable transaction per request. It writes the same rows as
// Logbook (same schema, same counters) but does less checking.
//
// database/sql's default pool opens as many connections as there are concurrent
// requests but keeps only 2 idle, so under load most requests open a fresh SQLite
// connection. That is part of "straightforward"; -naive-max-conns shows how much
// of the gap it accounts for.
type naiveHandler struct {
	db *sql.DB
}

func newNaiveHandler(db *sql.DB) http.Handler {
	h := &naiveHandler{db: db}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions", h.createSession)
	mux.HandleFunc("POST /v1/sessions/{id}/messages", h.appendMessage)
	return mux
}

type naiveSession struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	CreatedAt int64  `json:"created_at"`
}

type naiveMessage struct {
	ID        string  `json:"id"`
	SessionID string  `json:"session_id"`
	Seq       int64   `json:"seq"`
	Role      string  `json:"role"`
	Content   string  `json:"content"`
	Tokens    int64   `json:"tokens"`
	Cost      float64 `json:"cost"`
	CreatedAt int64   `json:"created_at"`
}

func naiveID(prefix string) string {
	u := uuid.Must(uuid.NewV7())
	return prefix + hex.EncodeToString(u[:])
}

func (h *naiveHandler) createSession(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s := naiveSession{ID: in.ID, Status: "created", CreatedAt: time.Now().UnixMilli()}
	if s.ID == "" {
		s.ID = naiveID("ses_")
	}
	if _, err := h.db.ExecContext(r.Context(), `INSERT INTO sessions (tenant_id, id, status, metadata, created_at, updated_at)
		VALUES ('default', ?, ?, '{}', ?, ?)`, s.ID, s.Status, s.CreatedAt, s.CreatedAt); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusCreated, s)
}

func (h *naiveHandler) appendMessage(w http.ResponseWriter, r *http.Request) {
	var m naiveMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch m.Role {
	case "user", "assistant", "system", "tool":
	default:
		http.Error(w, "bad role", http.StatusUnprocessableEntity)
		return
	}
	if m.Tokens < 0 || m.Cost < 0 {
		http.Error(w, "tokens and cost must not be negative", http.StatusUnprocessableEntity)
		return
	}
	m.ID, m.SessionID, m.CreatedAt = naiveID("msg_"), r.PathValue("id"), time.Now().UnixMilli()

	status, err := h.appendTx(r.Context(), &m)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	writeJSON(w, http.StatusCreated, m)
}

// appendTx assigns the next seq and stores the message and the session's counters
// in one transaction, committed (and so fsynced) before the answer.
func (h *naiveHandler) appendTx(ctx context.Context, m *naiveMessage) (int, error) {
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return http.StatusServiceUnavailable, err
	}
	defer tx.Rollback() // a no-op once committed
	var (
		status      string
		tokens, gid int64
		cost        float64
	)
	err = tx.QueryRowContext(ctx, `SELECT status, last_seq, total_tokens, total_cost FROM sessions
		WHERE tenant_id = 'default' AND id = ?`, m.SessionID).Scan(&status, &m.Seq, &tokens, &cost)
	if errors.Is(err, sql.ErrNoRows) {
		return http.StatusNotFound, fmt.Errorf("session %q not found", m.SessionID)
	}
	if err != nil {
		return http.StatusServiceUnavailable, err
	}
	if status == "completed" || status == "archived" {
		return http.StatusConflict, fmt.Errorf("session %q is %s", m.SessionID, status)
	}
	// The schema numbers every message of the database (gid) and keeps running
	// totals per row; the write lock held since BEGIN makes MAX(gid)+1 safe.
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(gid), 0) + 1 FROM messages`).Scan(&gid); err != nil {
		return http.StatusServiceUnavailable, err
	}
	m.Seq++
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, tokens, cost,
		metadata, created_at, gid, cum_tokens, cum_cost) VALUES ('default', ?, ?, ?, ?, ?, ?, ?, '{}', ?, ?, ?, ?)`,
		m.SessionID, m.Seq, m.ID, m.Role, m.Content, m.Tokens, m.Cost, m.CreatedAt, gid, tokens+m.Tokens, cost+m.Cost); err != nil {
		return http.StatusServiceUnavailable, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET message_count = message_count + 1, last_seq = ?,
		total_tokens = total_tokens + ?, total_cost = total_cost + ?,
		status = CASE status WHEN 'created' THEN 'active' ELSE status END, updated_at = ?
		WHERE tenant_id = 'default' AND id = ?`, m.Seq, m.Tokens, m.Cost, m.CreatedAt, m.SessionID); err != nil {
		return http.StatusServiceUnavailable, err
	}
	if err := tx.Commit(); err != nil {
		return http.StatusServiceUnavailable, err
	}
	return http.StatusCreated, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
