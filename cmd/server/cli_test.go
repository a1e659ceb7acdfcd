package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/logbook/logbook/internal/repo/postgres"
)

// parseConfig parses args as run does and returns the config that serving would
// get, with the words left after the flags.
func parseConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (config, []string, error) {
	var cfg config
	var rest []string
	cmd := newCommand(getenv, io.Discard, stderr)
	cmd.Name = name
	cmd.Action = withConfig(func(_ context.Context, c *cli.Command, got config) error {
		cfg, rest = got, c.Args().Slice()
		return nil
	})
	err := cmd.Run(context.Background(), append([]string{name}, args...))
	return cfg, rest, err
}

// runEnv runs one command line to completion and returns what it wrote.
func runEnv(t *testing.T, getenv func(string) string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, getenv, &out, &errOut)
	return out.String(), errOut.String(), err
}

// newDB makes a migrated database file, as a first start of the server would.
func newDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "l.db")
	if _, stderr, err := runEnv(t, envOf(), "--db", db, "migrate", "up", "--create"); err != nil {
		t.Fatalf("migrate up --create: %v\n%s", err, stderr)
	}
	return db
}

func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s exists (stat: %v); nothing should have created it", path, err)
	}
}

func TestFlagsGoAnywhere(t *testing.T) {
	db := newDB(t)
	missing := filepath.Join(t.TempDir(), "missing.db")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"global_flag_after_the_command", []string{"keys", "create", "--tenant", "a1", "--scope", "admin", "--db", db}, nil},
		{"global_flag_before_the_command", []string{"--db", db, "keys", "create", "--tenant", "a2", "--scope", "admin"}, nil},
		{"global_flag_between_command_and_sub_command", []string{"keys", "--db", db, "create", "--tenant", "a3", "--scope", "admin"}, nil},
		{"one_dash", []string{"-db", db, "keys", "create", "-tenant", "a4", "-scope", "admin"}, nil},
		{"equals", []string{"keys", "create", "--tenant=a5", "--scope=admin", "-db=" + db}, nil},
		{"flag_after_the_command_wins_over_env", []string{"keys", "create", "--tenant", "a6", "--scope", "admin", "--db", db},
			[]string{"LOGBOOK_DB", missing}},
		{"env_alone", []string{"keys", "create", "--tenant", "a7", "--scope", "admin"}, []string{"LOGBOOK_DB", db}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := runEnv(t, envOf(tc.env...), tc.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, stderr)
			}
			if !strings.HasPrefix(stdout, "lb_") {
				t.Errorf("stdout = %q, want a key", stdout)
			}
		})
	}
	list, _, err := runEnv(t, envOf(), "keys", "list", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7"} {
		if !strings.Contains(list, " "+tenant+" ") {
			t.Errorf("keys list has no key for %s: the flag went elsewhere\n%s", tenant, list)
		}
	}
	mustNotExist(t, missing)

	// After a positional argument too, as with export's session id.
	ses := seed(t, db, "acme")
	out, _, err := runEnv(t, envOf(), "export", ses.ID, "--tenant", "acme", "--db", db)
	if err != nil || !strings.Contains(out, ses.ID) {
		t.Errorf("export ID --tenant --db: %v\n%s", err, out)
	}
}

func TestGlobalFlagForms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   []string
		check func(config) bool
	}{
		{"one_dash", []string{"-addr", ":1", "-sync", "normal"}, nil, func(c config) bool { return c.Addr == ":1" && c.Sync == "normal" }},
		{"bare_boolean", []string{"--insecure-no-auth"}, nil, func(c config) bool { return c.InsecureOpen }},
		{"boolean_true", []string{"--insecure-no-auth=true"}, nil, func(c config) bool { return c.InsecureOpen }},
		{"boolean_flag_over_env", []string{"--insecure-no-auth=false"}, []string{"LOGBOOK_INSECURE_NO_AUTH", "true"},
			func(c config) bool { return !c.InsecureOpen }},
		{"boolean_env", nil, []string{"LOGBOOK_MIGRATE", "false", "LOGBOOK_SEARCH_INDEX", "0"},
			func(c config) bool { return !c.Migrate && !c.SearchIndex }},
		{"boolean_defaults", nil, nil, func(c config) bool { return c.Migrate && c.SearchIndex && !c.InsecureOpen }},
		{"migrate_off", []string{"--migrate=false"}, nil, func(c config) bool { return !c.Migrate }},
		{"numbers", []string{"--rate-limit", "7", "--checkpoint-keep=3", "--max-body-bytes", "10"}, nil,
			func(c config) bool { return c.RateLimit == 7 && c.CheckpointKeep == 3 && c.MaxBodyBytes == 10 }},
		{"empty_env_is_unset", nil, []string{"LOGBOOK_DB", "", "LOGBOOK_ADDR", ""},
			func(c config) bool { return c.DB == "data/logbook.db" && c.Addr == "127.0.0.1:8080" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseConfig("logbook", tc.args, envOf(tc.env...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("args %q env %q gave %+v", tc.args, tc.env, cfg)
			}
		})
	}
}

// Help is asked for, so it is an answer: stdout, exit 0, no side effects. The
// root lists every server flag with its variable; a command lists its own
// flags and, of the server's, only --db, which it works on.
func TestHelpOnEveryCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.db")
	for _, path := range [][]string{
		{}, {"migrate"}, {"migrate", "status"}, {"migrate", "up"}, {"migrate", "down"},
		{"keys"}, {"keys", "create"}, {"keys", "list"}, {"keys", "revoke"},
		{"export"}, {"import"}, {"agents"}, {"agents", "export"}, {"agents", "import"},
		{"backup"}, {"version"}, {"help"}, {"keys", "help"},
	} {
		for _, flag := range []string{"-h", "--help", "-help"} {
			name := strings.Join(append([]string{"logbook"}, path...), " ")
			t.Run(strings.ReplaceAll(name, " ", "_")+flag, func(t *testing.T) {
				args := append(append([]string{"--db", missing}, path...), flag)
				stdout, stderr, err := runEnv(t, envOf(), args...)
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				if stderr != "" {
					t.Errorf("stderr = %q, want nothing", stderr)
				}
				want := []string{"NAME:\n   " + name + " ", "--help, -h"}
				var unwanted []string
				last := ""
				if len(path) > 0 {
					last = path[len(path)-1]
				}
				switch {
				case len(path) == 0:
					want = append(want, "--db DB", "[$LOGBOOK_DB]", "--sync", "[$LOGBOOK_SYNC]", "--embedding-url", "[$LOGBOOK_ADDR]")
				case last == "version" || last == "help":
					unwanted = []string{"--db", "--sync", "GLOBAL OPTIONS"}
				default:
					want = append(want, "--db DB", "[$LOGBOOK_DB]")
					unwanted = []string{"--sync", "--addr", "--embedding-url", "[$LOGBOOK_SYNC]"}
				}
				for _, w := range want {
					if !strings.Contains(stdout, w) {
						t.Errorf("help lacks %q:\n%s", w, stdout)
					}
				}
				for _, u := range unwanted {
					if strings.Contains(stdout, u) {
						t.Errorf("help shows %q, a flag this command does not use:\n%s", u, stdout)
					}
				}
			})
		}
	}
	mustNotExist(t, missing)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"COMMANDS:", "keys", "agents", "backup", "version", "[$LOGBOOK_ADDR]"}},
		{[]string{"help", "keys"}, []string{"logbook keys", "create", "revoke", "[$LOGBOOK_DB]"}},
		{[]string{"help", "keys", "create"}, []string{"logbook keys create", "--tenant", "--scope", "[$LOGBOOK_DB]"}},
		{[]string{"keys", "help", "create"}, []string{"logbook keys create", "--tenant", "--scope", "[$LOGBOOK_DB]"}},
		{[]string{"help", "agents", "import"}, []string{"logbook agents import", "--as-new", "FILE"}},
		{[]string{"import", "--help"}, []string{"--create", "--as-new", "--file FILE"}},
		{[]string{"migrate", "up", "--help"}, []string{"--create"}},
	} {
		stdout, _, err := runEnv(t, envOf(), tc.args...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
		}
		for _, want := range tc.want {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v lacks %q:\n%s", tc.args, want, stdout)
			}
		}
	}
}

// A flag with no default that a command needs is named as required, not
// refused for the length of a value nobody gave.
func TestRequiredFlagsSayRequired(t *testing.T) {
	db := newDB(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "create", "--scope", "admin"}, "logbook keys create needs --tenant NAME, which is required"},
		{[]string{"keys", "create", "--tenant", "acme"}, "logbook keys create needs --scope read|write|admin, which is required"},
		{[]string{"keys", "create", "--tenant", "", "--scope", "admin"}, "--tenant must be 1 to 128 characters"},
		{[]string{"keys", "create", "--tenant", "acme", "--scope", "root"}, "--scope must be read, write or admin"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			stdout, _, err := runEnv(t, envOf(), append([]string{"--db", db}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want no key", stdout)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	out, _, err := runEnv(t, envOf(), "version")
	v := strings.TrimSuffix(out, "\n")
	if err != nil || v == "" || strings.Contains(v, "\n") {
		t.Fatalf("version printed %q (%v), want one non-empty line", out, err)
	}

	base, stop := runInProcess(t, []string{"--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "l.db")}, envOf("LOGBOOK_LOG_LEVEL", "warn"))
	res, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Status, Version string }
	err = json.NewDecoder(res.Body).Decode(&health)
	res.Body.Close()
	if err != nil || health.Version != v {
		t.Errorf("/healthz version = %q (%v), want %q as logbook version prints", health.Version, err, v)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// make build stamps the version with -X main.version; a renamed variable would
// silently fall back, so build one binary the same way.
func TestVersionFromLinkerFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "logbook")
	goBin := os.Getenv("GO") // as TestCrash finds it
	if goBin == "" {
		goBin = "go"
	}
	build := exec.Command(goBin, "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != "v9.8.7-test" {
		t.Errorf("version = %q (%v), want v9.8.7-test", got, err)
	}
}

// A backup path that starts with - is a flag (so "backup --help" no longer makes
// a file named --help); the POSIX -- still lets such a name through.
func TestBackupPathIsNeverAFlag(t *testing.T) {
	db := newDB(t)
	dir := t.TempDir()
	t.Chdir(dir)
	if _, _, err := runEnv(t, envOf(), "--db", db, "backup", "--help"); err != nil {
		t.Errorf("backup --help: %v", err)
	}
	_, _, err := runEnv(t, envOf(), "--db", db, "backup", "-x")
	if err == nil || !strings.Contains(err.Error(), "-x") {
		t.Errorf("backup -x: %v, want an unknown-flag error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("backup with flags wrote %v", entries)
	}
	if _, _, err := runEnv(t, envOf(), "--db", db, "backup", "--", "-odd.db"); err != nil {
		t.Errorf("backup -- -odd.db: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "-odd.db")); err != nil {
		t.Errorf("backup -- -odd.db wrote no file: %v", err)
	}
}

func TestExtraArgumentsAreRefused(t *testing.T) {
	db := newDB(t)
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"backup", "a", "b"},
		{"export", "s1", "s2"},
		{"keys", "list", "extra"},
		{"keys", "create", "--tenant", "t", "--scope", "read", "extra"},
		{"keys", "revoke", "key_1", "key_2"},
		{"migrate", "up", "extra"},
		{"migrate", "status", "extra"},
		{"version", "x"},
		{"import", "extra"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			stdout, _, err := runEnv(t, envOf(), append([]string{"--db", db}, args...)...)
			if err == nil || !strings.Contains(err.Error(), "argument") {
				t.Errorf("err = %v, want a refusal naming the arguments", err)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing done", stdout)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused commands wrote %v", entries)
	}
	if list, _, _ := runEnv(t, envOf(), "--db", db, "keys", "list"); strings.Count(list, "\n") != 1 {
		t.Errorf("a refused keys create made a key:\n%s", list)
	}
}

// A mistyped --db used to create an empty database and act on it.
func TestAdminCommandsNeedTheDatabaseFile(t *testing.T) {
	export := filepath.Join(t.TempDir(), "s.ndjson")
	src := newDB(t)
	ses := seed(t, src, "default")
	out, _, err := runEnv(t, envOf(), "--db", src, "export", ses.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(export, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "nested")
	missing := filepath.Join(dir, "typo.db")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"keys_create", []string{"keys", "create", "--tenant", "t", "--scope", "admin"}},
		{"keys_list", []string{"keys", "list"}},
		{"keys_revoke", []string{"keys", "revoke", "key_1"}},
		{"export", []string{"export", ses.ID}},
		{"import", []string{"import", "--file", export}},
		{"migrate_status", []string{"migrate", "status"}},
		{"migrate_up", []string{"migrate", "up"}},
		{"migrate_down", []string{"migrate", "down"}},
		{"backup", []string{"backup", filepath.Join(t.TempDir(), "copy.db")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runEnv(t, envOf("LOGBOOK_DB", missing), tc.args...)
			if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "does not exist") {
				t.Errorf("err = %v, want one saying %s does not exist", err, missing)
			}
			mustNotExist(t, dir)
		})
	}

	// --create is the explicit way to a new file, directory included.
	restored := filepath.Join(dir, "restored.db")
	if out, _, err := runEnv(t, envOf(), "--db", restored, "import", "--create", "--file", export); err != nil || strings.TrimSpace(out) != ses.ID {
		t.Fatalf("import --create: %v, printed %q", err, out)
	}
	if again, _, err := runEnv(t, envOf(), "--db", restored, "export", ses.ID); err != nil || again == "" {
		t.Errorf("export after import --create: %v", err)
	}
	fresh := filepath.Join(t.TempDir(), "new", "fresh.db")
	if out, _, err := runEnv(t, envOf(), "migrate", "up", "--create", "--db", fresh); err != nil || !strings.Contains(out, "applied") {
		t.Errorf("migrate up --create: %v\n%s", err, out)
	}
}

func TestUnknownCommandsAndFlags(t *testing.T) {
	db := newDB(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"keys", "frob"}, `unknown command "frob" for logbook keys`},
		{[]string{"keys"}, "create, list or revoke"},
		{[]string{"migrate", "sideways"}, `unknown command "sideways"`},
		{[]string{"migrate"}, "status, up or down"},
		{[]string{"help", "frob"}, `no command "frob" in logbook`},
		{[]string{"help", "keys", "frob"}, `no command "frob" in logbook keys`},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"keys", "create", "--nope"}, "logbook keys create --help"},
		{[]string{"export", "--sesion", "s"}, "-sesion"},
		// --migrate takes =false now; the old spaced form must not start a server.
		{[]string{"--migrate", "false"}, "--migrate=false"},
		{[]string{"--rate-limit", "many"}, "rate-limit"},
		{[]string{"--db"}, "flag needs an argument"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			// Cancelled: a line wrongly taken for "serve" returns at once (and
			// fails the test) instead of serving until the test times out.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var out bytes.Buffer
			err := run(ctx, tc.args, envOf("LOGBOOK_DB", db, "LOGBOOK_ADDR", "127.0.0.1:0"), &out, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", out.String())
			}
		})
	}
}

// LOGBOOK_KEY=$(logbook keys create ...) must capture the key and nothing else.
func TestKeysCreateWritesOnlyTheKeyToStdout(t *testing.T) {
	db := newDB(t)
	stdout, stderr, err := runEnv(t, envOf(), "keys", "create", "--scope", "admin", "--tenant", "acme", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSuffix(stdout, "\n")
	if strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(key, "lb_") || strings.ContainsAny(key, " \t") {
		t.Fatalf("stdout = %q, want the key alone on one line", stdout)
	}
	// lb_<id>_<secret> and key_<id>: stderr names the id to revoke it by.
	id := "key_" + strings.Split(key, "_")[1]
	if !strings.Contains(stderr, "created "+id) || strings.Contains(stderr, key) {
		t.Errorf("stderr = %q, want the id %s and not the key", stderr, id)
	}
}

// run reads the environment only through getenv: what the process has set does
// not leak into a test (or into an embedding program).
func TestRunReadsOnlyItsGetenv(t *testing.T) {
	db := newDB(t)
	t.Setenv("LOGBOOK_DB", filepath.Join(t.TempDir(), "elsewhere.db"))
	t.Setenv("LOGBOOK_SYNC", "sometimes")
	t.Setenv("LOGBOOK_MAX_BODY_BYTES", "lots")
	if _, _, err := runEnv(t, envOf("LOGBOOK_DB", db), "keys", "list"); err != nil {
		t.Errorf("keys list read the process environment: %v", err)
	}
	cfg, _, err := parseConfig("logbook", nil, envOf(), io.Discard)
	if err != nil || cfg.DB != "data/logbook.db" || cfg.Sync != "full" {
		t.Errorf("config from an empty getenv: %+v, %v", cfg, err)
	}
}

// The collector's setting is GOGC's syntax under a flag of its own, with GOGC as
// its variable, and a default that is not Go's.
func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want int
		err  string
	}{
		{name: "default", want: 400},
		{name: "GOGC", env: []string{"GOGC", "100"}, want: 100},
		{name: "GOGC off", env: []string{"GOGC", "off"}, want: -1},
		{name: "flag wins", env: []string{"GOGC", "100"}, args: []string{"--gc-percent", "50"}, want: 50},
		{name: "not a number", args: []string{"--gc-percent", "lots"}, err: "gc-percent"},
		{name: "negative", env: []string{"GOGC", "-5"}, err: "gc-percent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseConfig("logbook", tc.args, envOf(tc.env...), io.Discard)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case cfg.GCPercent != tc.want:
				t.Errorf("GCPercent = %d, want %d", cfg.GCPercent, tc.want)
			}
		})
	}
}

// --pgvector is auto unless said otherwise, and nothing but its three words.
func TestPGVectorFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want postgres.PGVector
		err  string
	}{
		{name: "default", want: postgres.PGVectorAuto},
		{name: "on", args: []string{"--pgvector", "on"}, want: postgres.PGVectorOn},
		{name: "env off", env: []string{"LOGBOOK_PGVECTOR", "off"}, want: postgres.PGVectorOff},
		{name: "bad", args: []string{"--pgvector", "yes"}, err: "pgvector must be auto, on or off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseConfig("logbook", tc.args, envOf(tc.env...), io.Discard)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case cfg.PGVector != tc.want:
				t.Errorf("PGVector = %q, want %q", cfg.PGVector, tc.want)
			}
		})
	}
}
