// Command agentloop is an agent runtime in miniature, on the Go client: it
// keeps a conversation in Logbook, runs a (scripted, offline) model and its
// tools in a loop, and writes a checkpoint after every iteration. Killed
// mid-turn, it is started again and takes over where the session stands:
// GET …/resume says what is there and what is wrong with it, POST …/repair
// answers the tool call the crash left without a result, and the loop
// finishes the turn.
//
//	go run ./examples/agentloop -session demo -crash-at tool-call   # dies by SIGKILL
//	go run ./examples/agentloop -session demo                       # resumes, finishes
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/logbook/logbook/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("agentloop", flag.ContinueOnError)
	server := fs.String("server", envOr(getenv, "LOGBOOK_URL", "http://127.0.0.1:8080"), "Logbook's URL ($LOGBOOK_URL)")
	key := fs.String("key", getenv("LOGBOOK_API_KEY"), "API key, if the server needs one ($LOGBOOK_API_KEY)")
	session := fs.String("session", "agentloop-demo", "the session to start, or to resume when it exists")
	crashAt := fs.String("crash-at", "", `"tool-call": kill this process (SIGKILL) right after the first tool call is stored, before its result`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *crashAt != "" && *crashAt != "tool-call" {
		return errors.New(`-crash-at: the only crash point is "tool-call"`)
	}
	lb, err := client.New(*server, client.WithAPIKey(*key), client.WithUserAgent("logbook-agentloop"))
	if err != nil {
		return err
	}
	a := &agent{lb: lb, sessionID: *session, model: scriptedModel{}, tools: tools, script: userTurns,
		out: stdout, crashAtToolCall: *crashAt == "tool-call"}
	return a.run(ctx)
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
