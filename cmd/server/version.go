package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/urfave/cli/v3"
)

// version is set at link time by make build:
// -ldflags "-X main.version=$(git describe --tags --always --dirty)".
var version string

// buildVersion is what this binary calls itself, in `logbook version` and in
// GET /healthz. Without the linker flag (go build, go run) it falls back to the
// commit Go stamps into the binary, then to the module version of a
// `go install …@vX.Y.Z`, which carries no commit.
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		return rev
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	return "dev"
}

func versionCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print this build's version (the one GET /healthz reports)",
		Action: func(_ context.Context, cmd *cli.Command) error {
			if err := wantArgs(cmd, 0, ""); err != nil {
				return err
			}
			fmt.Fprintln(stdout, buildVersion())
			return nil
		},
	}
}
