//go:build unix

// The crash test needs SIGKILL and SIGTERM with their Unix meaning.

package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

const (
	crashSessions = 4
	crashWorkers  = 16
	// A request that outlives this is treated like one cut by a crash: retried.
	crashHTTPTimeout = 5 * time.Second
)

// TestCrash kills a real server process with SIGKILL while 16 clients append
// messages, restarts it on the same file, and checks that every acknowledged write
// survived exactly once, that retries of writes cut off by the crash land once, and
// that seqs and session counters stayed consistent.
//
// LOGBOOK_CRASH_CYCLES (default 5) and LOGBOOK_CRASH_PHASE (default 700ms, the mean
// time between restart and kill) size it; LOGBOOK_CRASH_SEED replays a kill
// schedule.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test starts and kills server processes; skipped with -short")
	}
	runCrash(t, filepath.Join(t.TempDir(), "logbook.db"), nil)
}

// TestCrashPostgres is the same on PostgreSQL, where every other cycle kills
// the database server instead (immediate shutdown, then a restart): Logbook
// answers 503 meanwhile, clients resend, and Logbook goes on by itself. Every
// acknowledged append must be there once either way.
func TestCrashPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test starts and kills server processes; skipped with -short")
	}
	cluster := pgtest.Start(t)
	runCrash(t, cluster.URL("postgres"), func() error {
		if err := cluster.Kill(); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond) // down for a while, under load
		return cluster.Restart()
	})
}

// runCrash runs the crash test on db; with killDB, even cycles kill the
// database rather than Logbook.
func runCrash(t *testing.T, db string, killDB func() error) {
	cycles := envInt(t, "LOGBOOK_CRASH_CYCLES", 5)
	phase := envDuration(t, "LOGBOOK_CRASH_PHASE", 700*time.Millisecond)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LOGBOOK_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LOGBOOK_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed=%d cycles=%d phase=%v (LOGBOOK_CRASH_SEED=%d replays the schedule)", seed, cycles, phase, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	began := time.Now()

	// Every wait below is bounded by this, so a wedged server fails the test
	// instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+time.Duration(cycles)*(3*phase+15*time.Second))
	defer cancel()

	bin := buildServer(t)
	client := &http.Client{
		Timeout: crashHTTPTimeout,
		Transport: &http.Transport{
			Proxy:               nil, // only 127.0.0.1, whatever HTTP_PROXY says
			MaxIdleConns:        4 * crashWorkers,
			MaxIdleConnsPerHost: 4 * crashWorkers,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	defer client.CloseIdleConnections()

	cl := newCluster()
	srv := startServer(t, bin, db)
	cl.setUp(srv.base)

	sessions := make([]string, crashSessions)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("crash-%d", i)
		status, body := doJSON(t, client, http.MethodPost, srv.base+"/v1/sessions", map[string]string{"id": sessions[i]})
		if status != http.StatusCreated {
			t.Fatalf("create session %s: %d %s", sessions[i], status, body)
		}
	}

	var (
		stop    atomic.Bool
		failed  atomic.Bool // a worker met an answer it cannot go on from
		acked   atomic.Int64
		wg      sync.WaitGroup
		workers = make([]*crashWorker, crashWorkers)
	)
	for i := range workers {
		workers[i] = &crashWorker{
			t: t, id: i, client: client, cluster: cl, sessions: sessions,
			rng: rand.New(rand.NewPCG(seed, uint64(i)+1)), stop: &stop, acked: &acked, cancel: cancel,
			last: map[string]ack{}, failed: &failed, dbCanDie: killDB != nil,
		}
		wg.Add(1)
		go func(w *crashWorker) {
			defer wg.Done()
			w.run(ctx)
		}(workers[i])
	}
	// Whatever happens, workers must be gone before the test returns: they call t.
	defer func() {
		stop.Store(true)
		cancel()
		wg.Wait()
	}()

	// A failure stops the kills, but the checks below still run: they name the
	// lost or duplicated keys.
	for cycle := 1; cycle <= cycles && !t.Failed(); cycle++ {
		delay := phase/2 + time.Duration(rng.Int64N(int64(phase)+1))
		before := acked.Load()
		sleepCtx(ctx, delay)
		if failed.Load() {
			t.Fatalf("cycle %d: a worker failed (see above); seed=%d", cycle, seed)
		}
		if ctx.Err() != nil {
			t.Fatalf("cycle %d: out of time: %v; seed=%d", cycle, ctx.Err(), seed)
		}
		srv.mustBeRunning(t)
		if killDB != nil && cycle%2 == 0 {
			n := acked.Load() - before
			if err := killDB(); err != nil {
				t.Fatalf("cycle %d: kill the database: %v", cycle, err)
			}
			t.Logf("cycle %d: database killed after %v and restarted, %d writes acknowledged before", cycle, delay.Round(time.Millisecond), n)
			continue
		}
		cl.setDown()
		srv.kill(t)
		client.CloseIdleConnections()
		n := acked.Load() - before
		if n == 0 {
			t.Errorf("cycle %d: no write was acknowledged in %v: the kill did not happen under load", cycle, delay)
		}
		restart := time.Now()
		srv = startServer(t, bin, db)
		cl.setUp(srv.base)
		t.Logf("cycle %d: SIGKILL after %v, %d writes acknowledged in that run; restarted in %v",
			cycle, delay.Round(time.Millisecond), n, time.Since(restart).Round(time.Millisecond))
	}

	// The final, clean run: the requests the last kill cut off are retried here,
	// then each worker stops after its in-flight request is acknowledged.
	sleepCtx(ctx, phase/2)
	stop.Store(true)
	waitWorkers(t, &wg, cancel)
	if failed.Load() {
		t.Fatalf("a worker failed (see above); seed=%d", seed)
	}

	var acks []ack
	for _, w := range workers {
		acks = append(acks, w.acks...)
	}
	perSession := verifyAPI(t, client, srv.base, sessions, acks)
	verifyFeed(t, srv.base, acks)
	srv.terminate(t)
	if !isPostgres(db) {
		verifyFile(t, db, len(acks))
	}

	var replays, cut, cutFresh, resends int
	for _, a := range acks {
		resends += a.retries
		if a.cut {
			cut++
			if a.status == http.StatusOK {
				replays++
			} else {
				cutFresh++
			}
		}
	}
	t.Logf("summary: seed=%d cycles=%d phase=%v duration=%v acknowledged=%d cut-by-crash=%d (replayed 200=%d, stored on retry 201=%d) resends=%d per-session=%v",
		seed, cycles, phase, time.Since(began).Round(time.Millisecond), len(acks), cut, replays, cutFresh, resends, perSession)
}

// ack is one acknowledged append, as the client was told.
type ack struct {
	key     string
	session string
	id      string
	seq     int64
	tokens  int64
	cost    float64
	status  int
	cut     bool // an earlier send of this request failed, so its fate was unknown
	retries int  // sends before the one acknowledged
}

type crashWorker struct {
	t        *testing.T
	id       int
	client   *http.Client
	cluster  *cluster
	sessions []string
	rng      *rand.Rand
	stop     *atomic.Bool
	acked    *atomic.Int64
	cancel   context.CancelFunc
	acks     []ack
	failed   *atomic.Bool
	last     map[string]ack // per session: this worker waits for each ack, so its seqs must grow
	// dbCanDie: a 503 (the database went away, perhaps mid-commit) leaves the
	// request's fate unknown, like a cut connection: resend it.
	dbCanDie bool
}

type appendBody struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Tokens  int64   `json:"tokens"`
	Cost    float64 `json:"cost"`
}

type message struct {
	ID        string  `json:"id"`
	SessionID string  `json:"session_id"`
	Seq       int64   `json:"seq"`
	Role      string  `json:"role"`
	Content   string  `json:"content"`
	Tokens    int64   `json:"tokens"`
	Cost      float64 `json:"cost"`
}

func (w *crashWorker) run(ctx context.Context) {
	for n := 0; !w.stop.Load() && ctx.Err() == nil; n++ {
		key := fmt.Sprintf("w%02d-%06d", w.id, n)
		session := w.sessions[w.rng.IntN(len(w.sessions))]
		role := "user"
		if n%2 == 1 {
			role = "assistant"
		}
		// The key rides in the content so that a duplicate row is recognisable; the
		// padding varies row sizes so that b-tree pages split and overflow.
		body := appendBody{
			Role:    role,
			Content: fmt.Sprintf("k=%s worker=%d n=%d %s", key, w.id, n, strings.Repeat("x", w.rng.IntN(1200))),
			Tokens:  1 + w.rng.Int64N(5000),
			Cost:    float64(w.rng.IntN(1_000_000)) / 1e7,
		}
		if !w.send(ctx, session, key, body) {
			w.failed.Store(true)
			w.cancel() // stop everyone: the test has already failed
			return
		}
	}
}

// send delivers one request until it is acknowledged. A transport error means the
// server may or may not have committed it, so the very same request (key and body)
// is sent again once a server is up; the answer then tells which it was.
func (w *crashWorker) send(ctx context.Context, session, key string, body appendBody) bool {
	payload, err := json.Marshal(body)
	if err != nil {
		w.t.Errorf("worker %d: marshal: %v", w.id, err)
		return false
	}
	cut := false
	for attempt := 0; ; attempt++ {
		base, err := w.cluster.current(ctx)
		if errors.Is(err, context.Canceled) {
			return false // the test is already failing and has said why
		}
		if err != nil {
			w.t.Errorf("worker %d: key %s session %s never acknowledged after %d attempts: %v", w.id, key, session, attempt, err)
			return false
		}
		status, resp, err := post(ctx, w.client, base+"/v1/sessions/"+session+"/messages", key, payload)
		if err != nil {
			cut = true
			sleepCtx(ctx, 5*time.Millisecond) // the server is dying or down: do not spin
			continue
		}
		if status == http.StatusServiceUnavailable && w.dbCanDie {
			cut = true
			sleepCtx(ctx, 20*time.Millisecond)
			continue
		}
		if status != http.StatusCreated && status != http.StatusOK {
			w.t.Errorf("worker %d: key %s session %s (attempt %d): status %d %s", w.id, key, session, attempt+1, status, resp)
			return false
		}
		if status == http.StatusOK && !cut {
			w.t.Errorf("worker %d: key %s was replayed (200) on its first send; nothing sent it before: %s", w.id, key, resp)
			return false
		}
		var m message
		if err := json.Unmarshal(resp, &m); err != nil {
			w.t.Errorf("worker %d: key %s: decode %d answer: %v: %s", w.id, key, status, err, resp)
			return false
		}
		if m.SessionID != session || m.Role != body.Role || m.Content != body.Content || m.Tokens != body.Tokens ||
			m.Cost != body.Cost || m.Seq < 1 || !strings.HasPrefix(m.ID, "msg_") {
			w.t.Errorf("worker %d: key %s (status %d, cut=%v): answer does not match the request: sent session=%s role=%s tokens=%d cost=%v content=%.40q, got session=%s id=%s seq=%d role=%s tokens=%d cost=%v content=%.40q",
				w.id, key, status, cut, session, body.Role, body.Tokens, body.Cost, body.Content,
				m.SessionID, m.ID, m.Seq, m.Role, m.Tokens, m.Cost, m.Content)
			return false
		}
		a := ack{key: key, session: session, id: m.ID, seq: m.Seq, tokens: body.Tokens,
			cost: body.Cost, status: status, cut: cut, retries: attempt}
		// Not fatal: the final check names every key this affected.
		if prev, ok := w.last[session]; ok && a.seq <= prev.seq {
			w.t.Errorf("worker %d: session %s: key %s acknowledged (status %d) with seq %d, but key %s was acknowledged earlier (status %d) with seq %d: an acknowledged write was lost or its seq reused",
				w.id, session, key, status, a.seq, prev.key, prev.status, prev.seq)
		}
		w.last[session] = a
		w.acks = append(w.acks, a)
		w.acked.Add(1)
		return true
	}
}

// post sends one append; an error means no complete answer arrived.
func post(ctx context.Context, client *http.Client, url, key string, payload []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err // cut mid-answer: as unknown as no answer
	}
	return res.StatusCode, body, nil
}

// cluster tells workers where the live server is, and makes them wait while there
// is none, so that retries go to the restarted server rather than spin.
type cluster struct {
	mu   sync.Mutex
	base string // "" while down
	up   chan struct{}
}

func newCluster() *cluster { return &cluster{up: make(chan struct{})} }

func (c *cluster) current(ctx context.Context) (string, error) {
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		c.mu.Lock()
		base, up := c.base, c.up
		c.mu.Unlock()
		if base != "" {
			return base, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (c *cluster) setUp(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = base
	close(c.up)
}

func (c *cluster) setDown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = ""
	c.up = make(chan struct{})
}

// crashServer is one server process.
type crashServer struct {
	cmd    *exec.Cmd
	base   string
	stdout *tail
	stderr *tail
	done   chan struct{}
	err    error // cmd.Wait's result, once done is closed
}

func buildServer(t *testing.T) string {
	t.Helper()
	goBin := os.Getenv("GO")
	if goBin == "" {
		p, err := exec.LookPath("go")
		if err != nil {
			t.Fatalf("no go command to build the server with (set GO): %v", err)
		}
		goBin = p
	}
	bin := filepath.Join(t.TempDir(), "logbook-server")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func startServer(t *testing.T, bin, db string, flags ...string) *crashServer {
	t.Helper()
	addrc := make(chan string, 1)
	s := &crashServer{
		stderr: &tail{max: 50},
		done:   make(chan struct{}),
		stdout: &tail{max: 50, onLine: func(line string) {
			if !strings.Contains(line, `"listening"`) {
				return
			}
			var l struct{ Message, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Message == "listening" {
				select {
				case addrc <- l.Addr:
				default:
				}
			}
		}},
	}
	// info, not warn: the "listening" line that carries the port is an info line.
	s.cmd = exec.Command(bin, append([]string{"--addr", "127.0.0.1:0", "--db", db, "--sync", "full", "--log-level", "info"}, flags...)...)
	s.cmd.Stdout = s.stdout
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start server: %v", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		if s.cmd.Process.Kill() == nil {
			select {
			case <-s.done:
			case <-time.After(10 * time.Second):
			}
		}
	})
	select {
	case addr := <-addrc:
		s.base = "http://" + addr
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("server listens on %q, not 127.0.0.1", addr)
		}
	case <-s.done:
		t.Fatalf("server exited before listening: %v\n%s", s.err, s.logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not log its address within 30s\n%s", s.logs())
	}
	return s
}

func (s *crashServer) logs() string {
	return "stderr:\n" + s.stderr.String() + "stdout (last lines):\n" + s.stdout.String()
}

// mustBeRunning catches a server that died on its own, which no kill explains.
func (s *crashServer) mustBeRunning(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
		t.Fatalf("server exited by itself: %v\n%s", s.err, s.logs())
	default:
	}
}

func (s *crashServer) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill server: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("server did not die within 10s of SIGKILL")
	}
	var ee *exec.ExitError
	if !errors.As(s.err, &ee) {
		t.Fatalf("server after SIGKILL: %v\n%s", s.err, s.logs())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("server ended with %v before the SIGKILL reached it\n%s", s.err, s.logs())
	}
}

// terminate is the graceful stop that must drain, checkpoint and exit 0.
func (s *crashServer) terminate(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM server: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not exit within 30s of SIGTERM\n%s", s.logs())
	}
	if s.err != nil {
		t.Fatalf("server exit after SIGTERM: %v (want status 0)\n%s", s.err, s.logs())
	}
}

// tail keeps the last lines a process wrote, for failure messages; at info level
// the server logs every request, far too much to keep.
type tail struct {
	mu      sync.Mutex
	max     int
	lines   []string
	partial []byte
	onLine  func(string)
}

func (b *tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		line := string(b.partial[:i])
		b.partial = b.partial[i+1:]
		if b.onLine != nil {
			b.onLine(line)
		}
		b.lines = append(b.lines, line)
		if len(b.lines) > b.max {
			b.lines = b.lines[len(b.lines)-b.max:]
		}
	}
	return len(p), nil
}

func (b *tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n") + "\n" + string(b.partial)
}

func waitWorkers(t *testing.T, wg *sync.WaitGroup, cancel context.CancelFunc) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cancel()
		<-done // each worker returns promptly once ctx is done
		t.Fatalf("workers did not finish their in-flight requests within 60s of the final restart")
	}
}

// verifyAPI reads everything back through the API and returns the number of
// messages per session.
func verifyAPI(t *testing.T, client *http.Client, base string, sessions []string, acks []ack) map[string]int {
	t.Helper()
	byKey := make(map[string]ack, len(acks))
	for _, a := range acks {
		if _, dup := byKey[a.key]; dup {
			t.Fatalf("test bug: key %s acknowledged twice by its worker", a.key)
		}
		byKey[a.key] = a
	}

	reported := 0
	report := func(format string, args ...any) {
		t.Helper()
		if reported++; reported <= 30 {
			t.Errorf(format, args...)
		}
	}

	stored := make(map[string]message, len(acks)) // by key
	type slot struct {
		session string
		seq     int64
	}
	keyAt := make(map[slot]string, len(acks))
	perSession := make(map[string]int, len(sessions))
	type sums struct {
		messages, tokens int64
		cost             float64
	}
	want := map[string]sums{}
	for _, sid := range sessions {
		msgs := listAll(t, client, base, sid)
		perSession[sid] = len(msgs)
		var (
			tokens int64
			cost   float64
		)
		for i, m := range msgs {
			if want := int64(i + 1); m.Seq != want {
				report("session %s: row %d has seq %d, want %d (gap or duplicate)", sid, i, m.Seq, want)
			}
			tokens += m.Tokens
			cost += m.Cost
			key, ok := keyOf(m.Content)
			if !ok {
				report("session %s seq %d: content %.40q carries no key", sid, m.Seq, m.Content)
				continue
			}
			keyAt[slot{sid, m.Seq}] = key
			if prev, dup := stored[key]; dup {
				report("key %s stored twice: session %s seq %d id %s and session %s seq %d id %s",
					key, prev.SessionID, prev.Seq, prev.ID, sid, m.Seq, m.ID)
				continue
			}
			stored[key] = m
		}

		var ses struct {
			MessageCount int64   `json:"message_count"`
			LastSeq      int64   `json:"last_seq"`
			TotalTokens  int64   `json:"total_tokens"`
			TotalCost    float64 `json:"total_cost"`
		}
		getJSON(t, client, base+"/v1/sessions/"+url.PathEscape(sid), &ses)
		n := int64(len(msgs))
		want[sid] = sums{n, tokens, cost}
		if ses.MessageCount != n || ses.LastSeq != n || ses.TotalTokens != tokens || !closeEnough(ses.TotalCost, cost) {
			report("session %s counters: message_count=%d last_seq=%d total_tokens=%d total_cost=%v; rows say %d, %d, %d, %v",
				sid, ses.MessageCount, ses.LastSeq, ses.TotalTokens, ses.TotalCost, n, n, tokens, cost)
		}
	}

	// The usage rollups, folded across the kills (and the tail not folded
	// yet), are the sums over the messages that survived.
	var usage struct {
		Data []struct {
			Key      string  `json:"key"`
			Messages int64   `json:"messages"`
			Tokens   int64   `json:"tokens"`
			Cost     float64 `json:"cost"`
		} `json:"data"`
	}
	day := time.Now().UTC()
	getJSON(t, client, base+"/v1/usage?group_by=session&from="+day.AddDate(0, 0, -1).Format(time.DateOnly)+
		"&to="+day.AddDate(0, 0, 1).Format(time.DateOnly), &usage)
	got := map[string]sums{}
	for _, r := range usage.Data {
		got[r.Key] = sums{r.Messages, r.Tokens, r.Cost}
	}
	for _, sid := range sessions {
		if g, w := got[sid], want[sid]; g.messages != w.messages || g.tokens != w.tokens || !closeEnough(g.cost, w.cost) {
			report("session %s usage: %d messages, %d tokens, cost %v; the rows say %d, %d, %v",
				sid, g.messages, g.tokens, g.cost, w.messages, w.tokens, w.cost)
		}
	}

	for _, a := range acks {
		m, ok := stored[a.key]
		switch {
		case !ok:
			holder := "nothing"
			if k, taken := keyAt[slot{a.session, a.seq}]; taken {
				holder = "key " + k
			}
			report("LOST: key %s acknowledged (status %d, cut=%v) as session %s seq %d id %s, not stored; that seq holds %s",
				a.key, a.status, a.cut, a.session, a.seq, a.id, holder)
		case m.SessionID != a.session || m.Seq != a.seq || m.ID != a.id || m.Tokens != a.tokens || m.Cost != a.cost:
			report("key %s acknowledged (status %d, cut=%v) as session %s seq %d id %s tokens %d cost %v; stored as session %s seq %d id %s tokens %d cost %v",
				a.key, a.status, a.cut, a.session, a.seq, a.id, a.tokens, a.cost, m.SessionID, m.Seq, m.ID, m.Tokens, m.Cost)
		}
	}
	// Every worker retried its in-flight request until acknowledged, so a stored
	// row without an ack is a write nobody asked for.
	for key, m := range stored {
		if _, ok := byKey[key]; !ok {
			report("PHANTOM: key %s stored as session %s seq %d id %s but never acknowledged", key, m.SessionID, m.Seq, m.ID)
		}
	}
	if reported > 30 {
		t.Errorf("... and %d more problems", reported-30)
	}
	if t.Failed() {
		t.FailNow()
	}
	return perSession
}

// verifyFeed reads the tenant's live feed from the log's start and checks
// that it carries every acknowledged message once, each session's in seq
// order: across the kills, the feed lost nothing and repeated nothing.
func verifyFeed(t *testing.T, base string, acks []ack) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want := make(map[string]ack, len(acks)) // by message id
	for _, a := range acks {
		want[a.id] = a
	}
	// A session's feed from after_seq=0 opens with the id of the log's start.
	start := readFeed(ctx, t, base+"/v1/sessions/"+url.PathEscape(acks[0].session)+"/events?after_seq=0", 0, nil)
	last := map[string]int64{}
	ids := map[string]bool{}
	got := 0
	readFeed(ctx, t, base+"/v1/events?type=message.appended&after="+url.QueryEscape(start), len(acks), func(id, data string) {
		var m message
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("feed event %s: %v: %.200s", id, err, data)
		}
		a, ok := want[m.ID]
		switch {
		case ids[id]:
			t.Fatalf("feed: id %s twice", id)
		case !ok:
			t.Fatalf("feed: message %s (session %s seq %d) was never acknowledged", m.ID, m.SessionID, m.Seq)
		case a.session != m.SessionID || a.seq != m.Seq || m.Seq != last[m.SessionID]+1:
			t.Fatalf("feed: message %s is session %s seq %d after seq %d; acknowledged as session %s seq %d",
				m.ID, m.SessionID, m.Seq, last[m.SessionID], a.session, a.seq)
		}
		ids[id], last[m.SessionID] = true, m.Seq
		got++
	})
	if got != len(acks) {
		t.Fatalf("feed: %d message events; %d appends were acknowledged", got, len(acks))
	}
}

// readFeed reads a live feed until it has n events (each given to each),
// and returns the stream's opening id.
func readFeed(ctx context.Context, t *testing.T, url string, n int, each func(id, data string)) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var open, id, data string
	for seen := 0; seen < n || open == ""; {
		if !sc.Scan() {
			t.Fatalf("GET %s: the feed ended after %d of %d events: %v", url, seen, n, sc.Err())
		}
		line := sc.Text()
		switch {
		case line == "" && data != "":
			each(id, data)
			seen, data = seen+1, ""
		case line == "" && open == "":
			open = id
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	return open
}

// listAll pages through a session's messages with the cursor.
func listAll(t *testing.T, client *http.Client, base, sid string) []message {
	t.Helper()
	var all []message
	cursor := ""
	for page := 0; ; page++ {
		if page > 100_000 {
			t.Fatalf("session %s: pagination does not end", sid)
		}
		u := base + "/v1/sessions/" + url.PathEscape(sid) + "/messages?limit=200"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var p struct {
			Data       []message `json:"data"`
			HasMore    bool      `json:"has_more"`
			NextCursor *string   `json:"next_cursor"`
		}
		getJSON(t, client, u, &p)
		all = append(all, p.Data...)
		if !p.HasMore {
			return all
		}
		if p.NextCursor == nil || *p.NextCursor == "" || len(p.Data) == 0 {
			t.Fatalf("session %s page %d: has_more without a next_cursor or rows", sid, page)
		}
		cursor = *p.NextCursor
	}
}

func keyOf(content string) (string, bool) {
	first, _, _ := strings.Cut(content, " ")
	return strings.CutPrefix(first, "k=")
}

func closeEnough(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// verifyFile opens the database after a clean stop, with no server in the way.
func verifyFile(t *testing.T, path string, acked int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()

	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	var result []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("integrity_check: %v", err)
		}
		result = append(result, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	rows.Close()
	if len(result) != 1 || result[0] != "ok" {
		t.Fatalf("integrity_check: %q", result)
	}

	// The rollups hold exactly the messages the usage folder passed before
	// the last stop: a fold commits with its mark, or not at all.
	for _, q := range [][2]string{
		{`SELECT COALESCE(SUM(messages), 0), COALESCE(SUM(tokens), 0) FROM usage_daily`,
			`SELECT COUNT(*), COALESCE(SUM(tokens), 0) FROM messages WHERE gid <= (SELECT folded FROM usage_state)`},
		{`SELECT COALESCE(SUM(messages), 0), COALESCE(SUM(tokens), 0) FROM usage_sessions`,
			`SELECT COUNT(*), COALESCE(SUM(tokens), 0) FROM messages WHERE gid <= (SELECT folded FROM usage_state)`},
	} {
		var rn, rt, mn, mt int64
		if err := db.QueryRow(q[0]).Scan(&rn, &rt); err != nil {
			t.Fatalf("%s: %v", q[0], err)
		}
		if err := db.QueryRow(q[1]).Scan(&mn, &mt); err != nil {
			t.Fatalf("%s: %v", q[1], err)
		}
		if rn != mn || rt != mt {
			t.Errorf("%s = %d messages, %d tokens; the folded messages are %d, %d tokens", q[0], rn, rt, mn, mt)
		}
	}

	// One request_keys row per request: a second would mean a key answered twice.
	for _, table := range []string{"messages", "request_keys"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		if n != acked {
			t.Errorf("%s holds %d rows; %d writes were acknowledged", table, n, acked)
		}
	}
}

func doJSON(t *testing.T, client *http.Client, method, url string, in any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, url, err)
	}
	return res.StatusCode, body
}

func getJSON(t *testing.T, client *http.Client, url string, out any) {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", url, err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: decode: %v: %.200s", url, err, body)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive Go duration", name, s)
	}
	return d
}
