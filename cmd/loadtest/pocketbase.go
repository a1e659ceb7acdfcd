package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PocketBase is the third baseline: a widely used Go server on the same SQLite
// driver, built from source by scripts/pocketbase.sh (its examples/base) and run
// as its own process like the others. Its collection "messages" mirrors a
// Logbook message, and its create, list and view rules are public, so the
// measured requests carry no token, as Logbook's do in open mode.
const (
	pbModule     = "github.com/pocketbase/pocketbase"
	pbCollection = "messages"
	// The superuser exists only to set the server up, on a database that lives
	// for one round on 127.0.0.1.
	pbEmail    = "loadtest@example.com"
	pbPassword = "loadtest-password"
	// pbSQLite is what PocketBase's own DefaultDBConnect (core/db_connect.go)
	// sets on every connection; the tool leaves it as it is.
	pbSQLite = "journal_mode=WAL, synchronous=NORMAL, busy_timeout=10000, cache_size=-32000"
	// pbLogs says how its request log is set. PocketBase writes a row per
	// request into its log database at info; at warn, like Logbook's server in
	// this tool, neither server writes anything per successful request.
	pbLogs = "its request log at warn, as Logbook's (logs.minLevel; at its default, info, it writes a row per request)"
)

// pbVersion is the version PocketBase's binary was built from, read from its Go
// build info: `go install …@version` records it there, while the binary's own
// --version says "(untracked)" unless set at link time.
func pbVersion(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil || info.Main.Path != pbModule {
		return "unknown"
	}
	return info.Main.Version
}

// startPocketBase runs PocketBase on a fresh data directory, with a superuser
// made by its own CLI beforehand, and sets it up for the measurements: its
// request log at warn, batches of up to batchSize creates allowed (for the paging
// fill), and the messages collection.
func startPocketBase(ctx context.Context, e *env, name string) (*server, error) {
	dir, err := os.MkdirTemp(e.tmp, name+"-")
	if err != nil {
		return nil, err
	}
	args := pbFlags(dir)
	up := exec.CommandContext(ctx, e.pbBin, append([]string{"superuser", "upsert", pbEmail, pbPassword}, args...)...)
	dieWithParent(up)
	if out, err := up.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: pocketbase superuser upsert: %v\n%s", name, err, out)
	}
	var s *server
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if s, err = start(name, dir, e.pbBin, nil, append([]string{"serve", "--http=" + addr}, args...)...); err != nil {
			return nil, err // start removed dir
		}
		s.addr, s.health = addr, "/api/health"
		if err = s.waitHealthy(ctx); err == nil {
			break
		}
		s.halt() // not stop: the next attempt serves the same directory
		if !strings.Contains(s.out.String(), "address already in use") || attempt == 2 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := setupPocketBase(ctx, e, "http://"+s.addr); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w\n%s", name, err, s.out)
	}
	return s, nil
}

// pbFlags keeps everything PocketBase reads or writes inside dir. --dev=false
// because PocketBase takes a binary under the temporary directory (such as
// /tmp/pb/base) for `go run` and then turns dev mode on, which prints every SQL
// statement; said explicitly, it is the same wherever the binary is. Without
// automigrate, creating the collection writes no migration file.
func pbFlags(dir string) []string {
	return []string{"--dir=" + filepath.Join(dir, "pb_data"), "--dev=false", "--automigrate=false",
		"--hooksDir=" + filepath.Join(dir, "pb_hooks"), "--migrationsDir=" + filepath.Join(dir, "pb_migrations"),
		"--publicDir=" + filepath.Join(dir, "pb_public")}
}

func setupPocketBase(ctx context.Context, e *env, base string) error {
	var auth struct {
		Token string `json:"token"`
	}
	if err := send(ctx, e.client, http.MethodPost, base+"/api/collections/_superusers/auth-with-password", "",
		mustJSON(map[string]string{"identity": pbEmail, "password": pbPassword}), http.StatusOK, &auth); err != nil {
		return fmt.Errorf("pocketbase superuser auth: %w", err)
	}
	if auth.Token == "" {
		return errors.New("pocketbase superuser auth: no token in the answer")
	}
	settings := map[string]any{
		"logs":  map[string]any{"minLevel": 4}, // slog.LevelWarn
		"batch": map[string]any{"enabled": true, "maxRequests": batchSize, "timeout": 60},
	}
	if err := send(ctx, e.client, http.MethodPatch, base+"/api/settings", auth.Token, mustJSON(settings), http.StatusOK, nil); err != nil {
		return fmt.Errorf("pocketbase settings: %w", err)
	}
	if err := send(ctx, e.client, http.MethodPost, base+"/api/collections", auth.Token, mustJSON(pbCollectionJSON()), http.StatusOK, nil); err != nil {
		return fmt.Errorf("pocketbase collection: %w", err)
	}
	return nil
}

// pbCollectionJSON is a Logbook message as a PocketBase base collection: the
// session and its seq, indexed together as Logbook's primary key is, and a
// creation time as Logbook stores one.
func pbCollectionJSON() map[string]any {
	public := "" // a rule of "" lets anyone; null, the default, superusers only
	return map[string]any{
		"name": pbCollection, "type": "base",
		"listRule": public, "viewRule": public, "createRule": public,
		"fields": []map[string]any{
			{"name": "session", "type": "text", "required": true},
			{"name": "seq", "type": "number", "onlyInt": true},
			{"name": "role", "type": "text"},
			{"name": "content", "type": "text"},
			{"name": "tokens", "type": "number", "onlyInt": true},
			{"name": "cost", "type": "number"},
			{"name": "created", "type": "autodate", "onCreate": true},
		},
		"indexes": []string{"CREATE INDEX idx_session_seq ON " + pbCollection + " (session, seq)"},
	}
}

// pbRecordJSON is messageJSON as a record of session, at seq: PocketBase does
// not number a session's records, so the client does.
func pbRecordJSON(session string, seq, client int) map[string]any {
	m := messageJSON(client)
	m["session"], m["seq"] = session, seq
	return m
}

// pbRecordsURL is where records are created and listed.
func pbRecordsURL(base string) string {
	return base + "/api/collections/" + pbCollection + "/records"
}

// pbPageURL asks for the 100 records of session after seq after, in seq order,
// as Logbook's …/messages?after_seq=after&limit=100 does. skipTotal=1 spares the
// COUNT(*) PocketBase runs by default to fill totalItems: Logbook's pages count
// nothing either.
func pbPageURL(base, session string, after int) string {
	q := url.Values{}
	q.Set("filter", pbFilter(session, after))
	q.Set("sort", "seq")
	q.Set("perPage", fmt.Sprint(pageSize))
	q.Set("skipTotal", "1")
	return pbRecordsURL(base) + "?" + q.Encode()
}

// pbFilter is PocketBase's filter syntax; session ids here are the tool's own
// (letters, digits, dashes), but a quote or backslash would end the string early,
// so those are escaped.
func pbFilter(session string, after int) string {
	esc := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(session)
	return fmt.Sprintf("(session='%s' && seq>%d)", esc, after)
}

// pbBatchBody creates records from..from+n-1 of session in one request to
// /api/batch, which PocketBase runs as one transaction.
func pbBatchBody(session string, from, n int) []byte {
	reqs := make([]map[string]any, n)
	for i := range reqs {
		reqs[i] = map[string]any{"method": http.MethodPost, "url": "/api/collections/" + pbCollection + "/records",
			"body": pbRecordJSON(session, from+i, 0)}
	}
	return mustJSON(map[string]any{"requests": reqs})
}

// send is postAs for any method, decoding the answer into dst when not nil.
func send(ctx context.Context, c *http.Client, method, url, key string, body []byte, want int, dst any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	authorize(req, key)
	var buf bytes.Buffer
	if err := do(c, req, want, &buf); err != nil {
		return err
	}
	if dst == nil {
		return nil
	}
	if err := json.Unmarshal(buf.Bytes(), dst); err != nil {
		return fmt.Errorf("%s %s: %w", method, req.URL.Path, err)
	}
	return nil
}
