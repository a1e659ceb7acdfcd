package api_test

import (
	"encoding/json"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
)

// curlCommand is one curl invocation from the README and the status the README
// says it answers ("# → 201" on the line before it).
type curlCommand struct {
	line    int
	want    int
	method  string
	target  string
	headers []string
	body    string
}

// TestReadmeWalkthrough runs every curl command of README.md, in order, against a
// real server, so that the documentation cannot drift from the API.
func TestReadmeWalkthrough(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(t, string(src))
	if len(cmds) < 10 {
		t.Fatalf("found %d curl commands in README.md; the walkthrough has more", len(cmds))
	}
	c := newClient(t)
	// The README's shell variables, taken from earlier answers as a reader would.
	vars := map[string]string{}
	expand := func(s string) string {
		for name, v := range vars {
			s = strings.ReplaceAll(s, "$"+name, v)
		}
		return s
	}
	for _, cmd := range cmds {
		target := expand(cmd.target)
		u, err := url.Parse("http://" + strings.TrimPrefix(target, "http://"))
		if err != nil || u.Host != "localhost:8080" {
			t.Fatalf("README.md:%d: curl target %q is not on localhost:8080", cmd.line, cmd.target)
		}
		var body any
		headers := make([]string, len(cmd.headers))
		for i, h := range cmd.headers {
			headers[i] = expand(h)
		}
		if cmd.body != "" {
			body = cmd.body
			// curl -d sends a form unless told otherwise, and so must this test.
			headers = append([]string{"Content-Type", "application/x-www-form-urlencoded"}, headers...)
		}
		res := c.do(cmd.method, u.RequestURI(), body, headers...)
		if res.Status != cmd.want {
			t.Fatalf("README.md:%d: %s %s answered %d, README says %d: %s", cmd.line, cmd.method, u.RequestURI(), res.Status, cmd.want, res.Body)
		}
		var answer struct {
			NextCursor *string `json:"next_cursor"`
			Key        string  `json:"key"`
		}
		if json.Unmarshal(res.Body, &answer) == nil {
			if answer.NextCursor != nil {
				vars["CURSOR"] = url.QueryEscape(*answer.NextCursor)
			}
			if answer.Key != "" {
				vars["LOGBOOK_KEY"] = answer.Key
			}
		}
	}
	t.Logf("ran %d curl commands from README.md", len(cmds))
}

// readmeCommands finds the curl commands in the README's sh blocks.
func readmeCommands(t *testing.T, src string) []curlCommand {
	var (
		out     []curlCommand
		inBlock bool
		want    int
		pending strings.Builder
		start   int
	)
	for i, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inBlock = trimmed == "```sh"
			continue
		case !inBlock:
			continue
		case pending.Len() > 0:
			pending.WriteString(" " + strings.TrimSuffix(trimmed, `\`))
		case strings.HasPrefix(trimmed, "# → "):
			n, err := strconv.Atoi(strings.Fields(strings.TrimPrefix(trimmed, "# → "))[0])
			if err != nil {
				t.Fatalf("README.md:%d: bad status comment %q", i+1, trimmed)
			}
			want = n
			continue
		case strings.HasPrefix(trimmed, "curl "):
			start = i + 1
			pending.WriteString(strings.TrimSuffix(trimmed, `\`))
		default:
			continue
		}
		if strings.HasSuffix(trimmed, `\`) || !quotesBalanced(pending.String()) {
			continue
		}
		if want == 0 {
			t.Fatalf("README.md:%d: curl command without a '# → STATUS' line before it", start)
		}
		out = append(out, parseCurl(t, start, want, shellWords(t, start, pending.String())))
		pending.Reset()
		want = 0
	}
	return out
}

func quotesBalanced(s string) bool {
	var quote rune
	for _, r := range s {
		switch {
		case quote == 0 && (r == '\'' || r == '"'):
			quote = r
		case r == quote:
			quote = 0
		}
	}
	return quote == 0
}

// shellWords splits a command line the way sh does for the quoting the README
// uses: single quotes verbatim, double quotes with $CURSOR left for later.
func shellWords(t *testing.T, line int, s string) []string {
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("README.md:%d: unbalanced quotes", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

func parseCurl(t *testing.T, line, want int, words []string) curlCommand {
	cmd := curlCommand{line: line, want: want, method: "GET"}
	for i := 1; i < len(words); i++ {
		next := func() string {
			i++
			if i >= len(words) {
				t.Fatalf("README.md:%d: %s needs a value", line, words[i-1])
			}
			return words[i]
		}
		switch w := words[i]; w {
		case "-s", "-i", "-sS":
		case "-X":
			cmd.method = next()
		case "-H":
			name, value, _ := strings.Cut(next(), ":")
			cmd.headers = append(cmd.headers, strings.TrimSpace(name), strings.TrimSpace(value))
		case "-d", "--data":
			cmd.body = next()
			if cmd.method == "GET" {
				cmd.method = "POST"
			}
		default:
			if strings.HasPrefix(w, "-") {
				t.Fatalf("README.md:%d: curl flag %s is not understood by this test", line, w)
			}
			cmd.target = w
		}
	}
	return cmd
}
