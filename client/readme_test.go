package client_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// README.md shows the stream examples as the tests run them: the body of
// each Example function, down to its Output comment, one tab less indented.
func TestReadmeShowsTheStreamExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_stream_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_stream_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !strings.HasPrefix(fn.Name.Name, "Example") {
			continue
		}
		found++
		body := string(src[fset.Position(fn.Body.Lbrace).Offset+2 : fset.Position(fn.Body.Rbrace).Offset])
		body, _, _ = strings.Cut(body, "\t// Output:")
		var want strings.Builder
		for _, l := range strings.SplitAfter(body, "\n") {
			want.WriteString(strings.TrimPrefix(l, "\t"))
		}
		if !strings.Contains(string(readme), "```go\n"+want.String()+"```\n") {
			t.Errorf("README.md does not show %s as it is:\n%s", fn.Name.Name, want.String())
		}
	}
	if found != 2 {
		t.Errorf("%d examples in example_stream_test.go, want 2", found)
	}
}
