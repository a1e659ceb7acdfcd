// Command scale measures Logbook as a tenant's data grows: it fills a fresh
// database with 10k, 1M and (with -large) 10M messages of a realistic shape
// through the public API (the batch route), and at each size measures the
// reads that could grow with the tenant instead of with the answer (search,
// session lists, pages, usage) and the operator's operations (integrity
// check, backups, export, purge, start-up, migrations), the operations with
// the p99 of appends before and during each. It prints every figure beside
// its 10k value as a ratio (docs/benchmarks.md keeps the table; docs/scale.md
// says what a ratio that grows with the tenant means).
//
//	make scale                     # 10k and 1M on SQLite
//	make scale SCALE_FLAGS=-large  # and 10M (~25 GB of disk, ~40 minutes)
//	go run ./cmd/scale -server bin/logbook -backend postgres
//
// Each size's database is deleted once measured (-keep keeps them).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

type options struct {
	server  string
	backend string
	sizes   []int64
	dir     string
	json    string
	keep    bool
}

// sizeResult is one size's figures.
type sizeResult struct {
	Messages int64     `json:"messages"`
	Facts    fillFacts `json:"fill"`
	Figures  []figure  `json:"figures"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1000, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1000_000, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a count such as 10k, 1M or 250000", s)
	}
	return n * mult, nil
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.StringVar(&o.server, "server", "bin/logbook", "the Logbook server binary to measure")
	fs.StringVar(&o.backend, "backend", "sqlite", "sqlite, or postgres (a throwaway cluster of its own)")
	large := fs.Bool("large", false, "also measure 10M messages (~25 GB of disk on SQLite)")
	sizes := fs.String("sizes", "", "the sizes to measure, comma-separated (default 10k,1M; with -large 10k,1M,10M); the first is the baseline")
	fs.StringVar(&o.dir, "dir", os.TempDir(), "where the databases go")
	fs.StringVar(&o.json, "json", "", "also write the figures as JSON to this file")
	fs.BoolVar(&o.keep, "keep", false, "keep each size's database")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	list := "10k,1M"
	if *large {
		list += ",10M"
	}
	if *sizes != "" {
		list = *sizes
	}
	for _, s := range strings.Split(list, ",") {
		n, err := parseSize(strings.TrimSpace(s))
		if err != nil {
			return o, err
		}
		o.sizes = append(o.sizes, n)
	}
	if o.backend != "sqlite" && o.backend != "postgres" {
		return o, fmt.Errorf("-backend must be sqlite or postgres, not %q", o.backend)
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if o.server, err = filepath.Abs(o.server); err != nil {
		return err
	}
	if fi, err := os.Stat(o.server); err != nil || fi.IsDir() {
		return fmt.Errorf("-server %s: not a file (make build)", o.server)
	}
	root, err := os.MkdirTemp(o.dir, "logbook-scale-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(root)
	}
	var cluster *pgtest.Cluster
	if o.backend == "postgres" {
		if cluster, err = pgtest.NewWith(pgtest.Options{Durable: true}); err != nil {
			return err
		}
		defer cluster.Stop()
	}
	c := &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var results []sizeResult
	for i, n := range o.sizes {
		fmt.Fprintf(stdout, "== %s messages on %s\n", human(n), o.backend)
		dir := filepath.Join(root, human(n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		db := filepath.Join(dir, "logbook.db")
		if cluster != nil {
			name := "scale_" + strings.ToLower(human(n))
			if err := createDatabase(ctx, cluster, name); err != nil {
				return err
			}
			db = cluster.URL(name)
		}
		res, err := measureSize(ctx, c, o, n, db, dir, stdout)
		if err != nil {
			return err
		}
		results = append(results, res)
		if !o.keep {
			os.RemoveAll(dir)
			if cluster != nil {
				_ = dropDatabase(ctx, cluster, "scale_"+strings.ToLower(human(n)))
			}
		}
		if i > 0 {
			printTable(stdout, o.backend, results)
		}
	}
	if len(results) == 1 {
		printTable(stdout, o.backend, results)
	}
	if o.json != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(o.json, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// measureSize fills a database of n messages and measures everything on it.
func measureSize(ctx context.Context, c *http.Client, o options, n int64, db, dir string, log io.Writer) (sizeResult, error) {
	res := sizeResult{Messages: n}
	add := func(f figure) {
		res.Figures = append(res.Figures, f)
		switch {
		case f.AppendsDur > 0:
			fmt.Fprintf(log, "  %-58s %10.1f ms  appends p99 %.1f → %.1f ms (%s)\n", f.Name, f.P50, f.AppendsBase, f.AppendsDur, f.Note)
		case f.Reps == 1:
			fmt.Fprintf(log, "  %-58s %s%s\n", f.Name, cell(f), noteOf(f))
		default:
			fmt.Fprintf(log, "  %-58s p50 %8.2f ms  p99 %8.2f ms  (%d reps%s)\n", f.Name, f.P50, f.P99, f.Reps, noteOf(f))
		}
	}
	s, _, err := startServer(ctx, o.server, db)
	if err != nil {
		return res, err
	}
	defer func() { s.stop() }()
	sessions, facts := plan(n)
	fmt.Fprintf(log, "  filling %d messages in %d sessions through the batch route\n", facts.Messages, facts.Sessions)
	if err := fill(ctx, c, s, sessions, &facts, log); err != nil {
		return res, err
	}
	res.Facts = facts
	add(figure{Name: "fill through the batch route (messages/s)", P50: float64(facts.Messages) / facts.FillSeconds,
		P99: float64(facts.Messages) / facts.FillSeconds, Reps: 1, Note: fmt.Sprintf("%.0f s", facts.FillSeconds)})
	idx, err := waitIndexed(ctx, c, s, log)
	if err != nil {
		return res, err
	}
	ms := float64(idx.Microseconds()) / 1000
	add(figure{Name: "searchable after the fill (index_lag 0)", P50: ms, P99: ms, Reps: 1})
	if s.isSQLite() {
		main, search := fileSize(db), fileSize(db+"-search")
		add(figure{Name: "database file (MB)", P50: float64(main) / 1e6, P99: float64(main) / 1e6, Reps: 1,
			Note: fmt.Sprintf("%.0f bytes a message", float64(main)/float64(facts.Messages))})
		add(figure{Name: "search index file (MB)", P50: float64(search) / 1e6, P99: float64(search) / 1e6, Reps: 1,
			Note: fmt.Sprintf("%.0f bytes a message", float64(search)/float64(facts.Messages))})
	}
	if _, err := reads(ctx, c, s, facts, add); err != nil {
		return res, err
	}
	s.stop()
	s, up, err := startServer(ctx, o.server, db)
	if err != nil {
		return res, err
	}
	ms = float64(up.Microseconds()) / 1000
	add(figure{Name: "start-up (to /readyz)", P50: ms, P99: ms, Reps: 1})
	if _, err := operations(ctx, c, s, facts, dir, add); err != nil {
		return res, err
	}
	s.stop()
	// The migrations this branch added, rolled back and applied again: what
	// an upgrade of a file this size costs (start-up applies them).
	for range 3 {
		if _, err := runCLI(ctx, o.server, db, "migrate", "down"); err != nil {
			return res, err
		}
	}
	t0 := time.Now()
	if _, err := runCLI(ctx, o.server, db, "migrate", "up"); err != nil {
		return res, err
	}
	ms = float64(time.Since(t0).Microseconds()) / 1000
	add(figure{Name: "migrations: session_meta (backfilled), jobs, usage index", P50: ms, P99: ms, Reps: 1})
	return res, nil
}

func noteOf(f figure) string {
	if f.Note == "" {
		return ""
	}
	return "; " + f.Note
}

func human(n int64) string {
	switch {
	case n >= 1000_000 && n%1000_000 == 0:
		return strconv.FormatInt(n/1000_000, 10) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// printTable prints each figure at every size beside the first size's, as a
// ratio of the p50s (of the durations, for the operations).
func printTable(w io.Writer, backend string, results []sizeResult) {
	fmt.Fprintf(w, "\n| %s | %s |", backend, human(results[0].Messages))
	for _, r := range results[1:] {
		fmt.Fprintf(w, " %s | ratio |", human(r.Messages))
	}
	fmt.Fprint(w, "\n| --- | --- |")
	for range results[1:] {
		fmt.Fprint(w, " --- | --- |")
	}
	fmt.Fprintln(w)
	for i, f := range results[0].Figures {
		fmt.Fprintf(w, "| %s | %s |", f.Name, cell(f))
		for _, r := range results[1:] {
			if i >= len(r.Figures) || r.Figures[i].Name != f.Name {
				fmt.Fprint(w, " – | – |")
				continue
			}
			g := r.Figures[i]
			ratio := "–"
			if f.P50 > 0 {
				ratio = fmt.Sprintf("%.2f×", g.P50/f.P50)
			}
			fmt.Fprintf(w, " %s | %s |", cell(g), ratio)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func cell(f figure) string {
	switch {
	case f.AppendsDur > 0:
		return fmt.Sprintf("%s (appends p99 %.1f→%.1f ms)", ms(f.P50), f.AppendsBase, f.AppendsDur)
	case f.Reps > 1:
		return fmt.Sprintf("%s (p99 %s)", ms(f.P50), ms(f.P99))
	case strings.Contains(f.Name, "(MB)") || strings.Contains(f.Name, "messages/s"):
		return fmt.Sprintf("%.0f", f.P50)
	}
	return ms(f.P50)
}

func ms(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

func createDatabase(ctx context.Context, c *pgtest.Cluster, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	return err
}

func dropDatabase(ctx context.Context, c *pgtest.Cluster, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
