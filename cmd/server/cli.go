package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/logbook/logbook/internal/model"
)

// newCommand is the whole command line: serving at the root, the maintenance
// commands beneath it. It writes only to stdout and stderr and reads the
// environment only through getenv, so that run stays testable in-process.
func newCommand(getenv func(string) string, stdout, stderr io.Writer) *cli.Command {
	root := &cli.Command{
		Name:  programName,
		Usage: "a durable session, message, checkpoint and memory store for AI agents, over SQLite or PostgreSQL",
		UsageText: programName + " [flags]                 serve the HTTP API\n" +
			programName + " [flags] COMMAND [args]  work on the database; flags may also follow COMMAND",
		Flags:  globalFlags(getenv),
		Action: serveAction(getenv, stdout),
		Commands: []*cli.Command{
			migrateCommand(stdout),
			keysCommand(stdout, stderr),
			exportCommand(stdout),
			importCommand(stdout, stderr),
			agentsCommand(stdout, stderr),
			backupCommand(stdout),
			versionCommand(stdout),
		},
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors go back to run's caller, which prints them once and picks the exit
		// status; the default handler would os.Exit from inside a test.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
	}
	_ = root.Walk(func(c *cli.Command) error {
		c.OnUsageError = usageError
		if len(c.Commands) > 0 {
			c.Commands = append(c.Commands, helpCommand())
		} else {
			// A leaf's words are data (a path, an id): "backup help" is a file named
			// help, not a request for help, which -h and --help are there for.
			c.HideHelpCommand = true
		}
		if c != root {
			c.CustomHelpTemplate = commandHelpTemplate(c.Name != "version" && c.Name != "help")
		}
		return nil
	})
	return root
}

// programName is what the binary calls itself: make build writes bin/logbook,
// the image installs /usr/local/bin/logbook, whatever the source folder.
const programName = "logbook"

// commandHelpTemplate is a command's help: its own flags, and of the server's
// ~40 flags only --db, the one a command on the database needs (the others
// are accepted anywhere but are the server's business: logbook --help). The
// library's default lists every one of them under every command.
func commandHelpTemplate(showDB bool) string {
	t := `NAME:
   {{template "helpNameTemplate" .}}

USAGE:
   {{template "usageTemplate" .}}{{if .Description}}

DESCRIPTION:
   {{template "descriptionTemplate" .}}{{end}}{{if .VisibleCommands}}

COMMANDS:{{template "visibleCommandTemplate" .}}{{end}}{{if .VisibleFlags}}

OPTIONS:{{template "visibleFlagTemplate" .}}{{end}}`
	if showDB {
		t += `{{range .VisiblePersistentFlags}}{{if eq (index .Names 0) "db"}}

GLOBAL OPTIONS:
   {{wrap .String 6}}{{end}}{{end}}`
	}
	return t + "\n"
}

// The library shows a group's help ("keys --help") with its default template,
// whatever the group's own; this one honours CustomHelpTemplate, as a leaf's
// help does.
func init() {
	cli.ShowSubcommandHelp = func(cmd *cli.Command) error {
		tmpl := cmd.CustomHelpTemplate
		if tmpl == "" {
			tmpl = cli.SubcommandHelpTemplate
		}
		cli.HelpPrinter(cmd.Root().Writer, tmpl, cmd)
		return nil
	}
}

// helpCommand stands in for the library's help command, which takes no flags,
// so that "logbook help --help" answers with help, as every command does,
// rather than an error. "help [COMMAND [SUB-COMMAND]]" shows that command's help.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "show the commands, or one command's help",
		ArgsUsage: "[COMMAND [SUB-COMMAND]]",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			lineage := cmd.Lineage() // help, the command it belongs to, …, the root
			var owner *cli.Command
			target := lineage[1]
			if len(lineage) > 2 {
				owner = lineage[2]
			}
			for _, name := range cmd.Args().Slice() {
				sub := target.Command(name)
				if sub == nil || sub.Name == "help" {
					return fmt.Errorf("no command %q in %s (see %s --help)", name, target.FullName(), target.FullName())
				}
				owner, target = target, sub
			}
			if owner == nil {
				return cli.ShowRootCommandHelp(target)
			}
			return cli.ShowCommandHelp(ctx, owner, target.Name)
		},
	}
}

// usageError keeps a parse error to one line that says where help is, instead
// of the library's default of dumping the whole help text onto stderr.
func usageError(_ context.Context, cmd *cli.Command, err error, _ bool) error {
	return fmt.Errorf("%w (see %s --help)", err, cmd.FullName())
}

// withConfig builds and checks the config before an action runs, so that every
// command refuses a bad flag or variable the same way serving does.
func withConfig(action func(context.Context, *cli.Command, config) error) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		cfg, err := configFrom(cmd)
		if err != nil {
			return err
		}
		return action(ctx, cmd, cfg)
	}
}

// needsSubcommand is the action of a command that only groups others: reached,
// it means the sub-command is missing or misspelled.
func needsSubcommand(choices string) cli.ActionFunc {
	return func(_ context.Context, cmd *cli.Command) error {
		if cmd.NArg() == 0 {
			return fmt.Errorf("%s needs a command: %s (see %s --help)", cmd.FullName(), choices, cmd.FullName())
		}
		return unknownCommand(cmd)
	}
}

// unknownCommand names the word that is neither a command nor a flag. A lone
// true or false is most often the value of a boolean flag written apart from it,
// which worked for --migrate and --search-index before they became booleans.
func unknownCommand(cmd *cli.Command) error {
	word := cmd.Args().First()
	if _, err := strconv.ParseBool(word); err == nil {
		return fmt.Errorf("unknown command %q for %s: a boolean flag takes its value after =, as in --migrate=%s",
			word, cmd.FullName(), word)
	}
	return fmt.Errorf("unknown command %q for %s (see %s --help)", word, cmd.FullName(), cmd.FullName())
}

// wantArgs refuses any count of positional arguments but n. A stray word is
// usually a flag that lost its dashes or a path the shell split in two, and
// acting on a guess would back up, export or revoke the wrong thing.
func wantArgs(cmd *cli.Command, n int, name string) error {
	got := cmd.Args().Slice()
	switch {
	case len(got) == n:
		return nil
	case n == 0:
		return fmt.Errorf("%s takes no arguments, got %q", cmd.FullName(), got)
	case len(got) == 0:
		return fmt.Errorf("%s needs %s (see %s --help)", cmd.FullName(), name, cmd.FullName())
	}
	return fmt.Errorf("%s takes one %s, got %d arguments: %q", cmd.FullName(), name, len(got), got)
}

// requireDatabase refuses to work on a database file that is not there. Opening
// creates the file, so a mistyped --db would otherwise make (and then report on,
// or write keys into) a new empty database. create is the explicit --create: it
// makes the directory too, as serving does.
func requireDatabase(cfg config, create bool) error {
	if isPostgres(cfg.DB) {
		return nil // the server says whether it answers, and whether its schema is there
	}
	if create {
		if err := os.MkdirAll(filepath.Dir(cfg.DB), 0o755); err != nil {
			return fmt.Errorf("create database directory: %w", err)
		}
		return nil
	}
	_, err := os.Stat(cfg.DB)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("database file %s does not exist (check --db or LOGBOOK_DB); "+
			"start the server once to create it, or pass --create to import or migrate up", cfg.DB)
	}
	if err != nil {
		return fmt.Errorf("database file: %w", err)
	}
	return nil
}

// createFlag lets import and migrate up start a new database file on purpose.
// Flags hold their parsed value, so each command gets its own.
func createFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "create", Usage: "create the database file (and its directory) if it does not exist"}
}

// tenantFlag names the tenant a command acts for; def "" makes it required.
// Commands check the value with tenantArg, so that a bad tenant reads as it
// does from the API.
func tenantFlag(def, usage string) *cli.StringFlag {
	return &cli.StringFlag{Name: "tenant", Value: def, Usage: usage}
}

// tenantArg is --tenant, checked: a command whose flag has no default needs
// it, and says so rather than that an empty name is too short.
func tenantArg(cmd *cli.Command) (string, error) {
	tenant := cmd.String("tenant")
	if tenant == "" && !cmd.IsSet("tenant") {
		return "", fmt.Errorf("%s needs --tenant NAME, which is required (see %s --help)", cmd.FullName(), cmd.FullName())
	}
	if !model.ValidClientID(tenant) {
		return "", fmt.Errorf("--tenant must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	}
	return tenant, nil
}
