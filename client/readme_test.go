package client_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// README.md's Go blocks are the examples the tests run: each block is the
// body of an Example function of example*_test.go (down to its Output
// comment, one tab less indented), and each Example is in README.md, so
// that every snippet a reader copies compiles and does what it says.
func TestReadmeShowsTheExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("example*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{} // body → Example
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			body := string(src[fset.Position(fn.Body.Lbrace).Offset+2 : fset.Position(fn.Body.Rbrace).Offset])
			body, _, _ = strings.Cut(body, "\t// Output:")
			var b strings.Builder
			for _, l := range strings.SplitAfter(body, "\n") {
				b.WriteString(strings.TrimPrefix(l, "\t"))
			}
			bodies[b.String()] = fn.Name.Name
		}
	}
	if len(bodies) < 6 {
		t.Fatalf("%d examples in %s, want at least 6", len(bodies), strings.Join(files, ", "))
	}
	shown := map[string]bool{}
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```\n").FindAllStringSubmatch(string(readme), -1) {
		name, ok := bodies[m[1]]
		if !ok {
			t.Errorf("README.md shows Go that no Example runs:\n%s", m[1])
			continue
		}
		shown[name] = true
	}
	for body, name := range bodies {
		if !shown[name] {
			t.Errorf("README.md does not show %s as it is:\n%s", name, body)
		}
	}
}
