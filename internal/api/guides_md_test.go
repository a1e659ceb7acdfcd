package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// A guide is a markdown file whose sh blocks run, in order, in one bash, as a
// reader pastes them: README.md and every file under docs/guides/. Its
// conventions:
//
//   - ```sh blocks run; ```console blocks are shown and never run (make run,
//     a PostgreSQL URL). ```bash and ```shell are refused, so that no shell
//     block is left unrun by accident.
//   - Each curl in an sh block has one "# → NNN" line before it: the status
//     its request must get. "# → NNN until …" is a curl in a loop: one or
//     more requests, each answered NNN.
//   - Every ```json block names what it shows, after the language: a
//     response ("json getSession 200", an operation of openapi.yaml and a
//     status), a request body ("json createSession request"), a schema of
//     openapi.yaml ("json Message", each NDJSON line one), or what jq printed
//     ("json output"). Each value is checked against that schema.
//   - A json or "text output" block whose nearest fenced block before it is
//     an sh block shows that block's output: its values (lines, for text)
//     must be the last ones the block printed, but for ids, times and
//     cursors, which differ from run to run.

// guide is one markdown file's blocks.
type guide struct {
	path   string // relative to the repository, as failures name it
	blocks []mdBlock
}

// mdBlock is one fenced block: its info string's words and its lines.
type mdBlock struct {
	line  int // of the first content line, 1-based
	info  []string
	lines []string
}

func (b mdBlock) lang() string {
	if len(b.info) == 0 {
		return ""
	}
	return b.info[0]
}

func (b mdBlock) runs() bool { return b.lang() == "sh" }

// readGuide parses a markdown file's fenced blocks.
func readGuide(root, rel string) (guide, error) {
	src, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return guide{}, err
	}
	g := guide{path: rel}
	var cur *mdBlock
	for i, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "```") {
			if cur != nil {
				cur.lines = append(cur.lines, line)
			}
			continue
		}
		if cur != nil {
			if trimmed != "```" {
				return g, fmt.Errorf("%s:%d: a fence inside a block", rel, i+1)
			}
			g.blocks = append(g.blocks, *cur)
			cur = nil
			continue
		}
		cur = &mdBlock{line: i + 2, info: strings.Fields(strings.TrimPrefix(trimmed, "```"))}
	}
	if cur != nil {
		return g, fmt.Errorf("%s:%d: a block that never ends", rel, cur.line-1)
	}
	return g, nil
}

// annotation is a "# → NNN" line and what it promises the curl after it.
type annotation struct {
	file   string
	line   int // of the curl
	status int
	repeat bool // "until": one or more requests
}

func (a annotation) String() string { return fmt.Sprintf("%s:%d", a.file, a.line) }

var curlWord = regexp.MustCompile(`(^|[\s($|])curl\s`)

// refusesUnrunShells fails a guide with a ```bash or ```shell block, which
// would read as a command to paste but never run.
func (g guide) refusesUnrunShells() error {
	for _, b := range g.blocks {
		switch b.lang() {
		case "bash", "shell", "shell-session", "zsh":
			return fmt.Errorf("%s:%d: a ```%s block: use sh (the tests run it) or console (shown only)", g.path, b.line-1, b.lang())
		}
	}
	return nil
}

// annotations lists the status lines of a guide's sh blocks in order. Each
// curl must have exactly one.
func (g guide) annotations() ([]annotation, error) {
	var (
		want    []annotation
		pending *annotation
	)
	for _, b := range g.blocks {
		if !b.runs() {
			continue
		}
		for j, line := range b.lines {
			n := b.line + j
			trimmed := strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(trimmed, "# → "); ok {
				if pending != nil {
					return nil, fmt.Errorf("%s:%d: a '# → STATUS' line with no curl after it", g.path, pending.line)
				}
				f := strings.Fields(rest)
				status, err := strconv.Atoi(f[0])
				if err != nil {
					return nil, fmt.Errorf("%s:%d: bad status line %q", g.path, n, trimmed)
				}
				pending = &annotation{file: g.path, line: n, status: status, repeat: len(f) > 1 && f[1] == "until"}
				continue
			}
			if strings.HasPrefix(trimmed, "#") || !curlWord.MatchString(line) {
				continue
			}
			if pending == nil {
				return nil, fmt.Errorf("%s:%d: a curl needs a '# → STATUS' line before it", g.path, n)
			}
			pending.line = n
			want = append(want, *pending)
			pending = nil
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: a '# → STATUS' line with no curl after it", g.path, pending.line)
	}
	return want, nil
}

// blockMark is the first byte of the line that starts a block's output.
const blockMark = "\x1e"

// script joins the guide's sh blocks into one bash script. Before each block
// it prints a mark, so that each block's output can be told apart, and it
// maps the script's lines back to the guide's for a failure.
func (g guide) script() (string, func(line int) string) {
	var s strings.Builder
	// A failing command names its line; bash -e then stops.
	s.WriteString(`trap 'echo "failed at script line $LINENO" >&2' ERR` + "\n")
	lines := []int{0, 0} // script line → guide line
	for i, b := range g.blocks {
		if !b.runs() {
			continue
		}
		fmt.Fprintf(&s, "printf '\\n%s%d\\n'\n", blockMark, i)
		lines = append(lines, b.line-1)
		for j, l := range b.lines {
			s.WriteString(l + "\n")
			lines = append(lines, b.line+j)
		}
	}
	return s.String(), func(n int) string {
		if n > 0 && n < len(lines) {
			return fmt.Sprintf("%s:%d", g.path, lines[n])
		}
		return fmt.Sprintf("%s (script line %d)", g.path, n)
	}
}

// outputs splits a guide's stdout into what each block printed, by block index.
func outputs(stdout string) map[int]string {
	out := map[int]string{}
	for _, part := range strings.Split(stdout, "\n"+blockMark)[1:] {
		num, body, _ := strings.Cut(part, "\n")
		if i, err := strconv.Atoi(num); err == nil {
			out[i] = body
		}
	}
	return out
}

var scriptLine = regexp.MustCompile(`failed at script line (\d+)`)
