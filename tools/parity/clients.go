package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// param is one parameter of a client method, as its source spells it.
type param struct {
	Name string
	Type string // "" when the source gives none (Python)
}

// method is one public method of a client's Client.
type method struct {
	Name   string
	Params []param // after Go's ctx and Python's self
	// AnyKeyword is Python's **fields: the method takes any keyword.
	AnyKeyword bool
	Where      string // file:line
}

// client is one client's Client class, read from its source.
type client struct {
	Lang    string
	name    func(camel string) string // a method name in this language's case
	methods map[string]method
	// says answers the names a parameter lets its caller say besides its
	// own: the properties of the schema it is, the fields of its options.
	says func(c *contract, p param) []string
}

// ---- Go ---------------------------------------------------------------------

// parseGo reads the methods of *Client in the client package at dir (its
// test files left out), the fields of its structs and its option functions.
func parseGo(dir string) (*client, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	methods := map[string]method{}
	fields := map[string][]string{}  // struct type → its fields
	options := map[string][]string{} // option type → its functions and their parameters
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					if d.Type.Results != nil && len(d.Type.Results.List) == 1 {
						if id, ok := d.Type.Results.List[0].Type.(*ast.Ident); ok {
							options[id.Name] = append(options[id.Name], d.Name.Name)
							for _, p := range goParams(d.Type.Params) {
								options[id.Name] = append(options[id.Name], p.Name)
							}
						}
					}
					continue
				}
				if types.ExprString(d.Recv.List[0].Type) != "*Client" {
					continue
				}
				ps := goParams(d.Type.Params)
				if len(ps) > 0 && ps[0].Type == "context.Context" {
					ps = ps[1:]
				}
				methods[d.Name.Name] = method{Name: d.Name.Name, Params: ps, Where: where(fset, d.Pos())}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								fields[ts.Name.Name] = append(fields[ts.Name.Name], n.Name)
							}
						}
					}
				}
			}
		}
	}
	says := func(c *contract, p param) []string {
		t := strings.TrimLeft(p.Type, ".*[]")
		if x, ok := strings.CutPrefix(t, "api."); ok {
			for _, op := range c.Ops {
				if norm(goName(op.ID)+"Params") == norm(x) {
					return op.Query
				}
			}
			return c.schema(x)
		}
		if f, ok := fields[t]; ok {
			return f
		}
		return options[t]
	}
	return &client{Lang: "Go", name: goName, methods: methods, says: says}, nil
}

func goParams(fl *ast.FieldList) []param {
	var ps []param
	for _, f := range fl.List {
		t := types.ExprString(f.Type)
		for _, n := range f.Names {
			ps = append(ps, param{Name: n.Name, Type: t})
		}
	}
	return ps
}

func where(fset *token.FileSet, pos token.Pos) string {
	p := fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

// ---- TypeScript ---------------------------------------------------------------

var (
	tsMethod    = regexp.MustCompile(`^  (?:async\s+)?([a-z]\w*)\s*(?:<[^(]*>)?\(`)
	tsAlias     = regexp.MustCompile(`(?m)^export type (\w+) = (?:S\["(\w+)"\]|Query<"(\w+)">);`)
	tsInterface = regexp.MustCompile(`(?m)^export interface (\w+)(?:<[^>]*>)?(?: extends ([^{]+))? \{\n((?:.*\n)*?)\}`)
	tsMember    = regexp.MustCompile(`(?m)^  (?:readonly )?(\w+)\??:`)
	tsInline    = regexp.MustCompile(`(\w+)\??\s*:`)
	tsIdent     = regexp.MustCompile(`\b[A-Z]\w*`)
)

// parseTypeScript reads the methods of the Client class in src/client.ts,
// the names types.ts gives the contract's schemas and queries, and the
// interfaces of src/*.ts (the options methods take).
func parseTypeScript(dir string) (*client, error) {
	src, err := os.ReadFile(filepath.Join(dir, "src", "client.ts"))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(src), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "export class Client ") })
	if start < 0 {
		return nil, fmt.Errorf("no export class Client in src/client.ts")
	}
	methods := map[string]method{}
	for i := start + 1; i < len(lines) && lines[i] != "}"; i++ {
		m := tsMethod.FindStringSubmatch(lines[i])
		if m == nil || m[1] == "constructor" {
			continue
		}
		sig, err := signature(strings.Join(lines[i:], "\n"), true)
		if err != nil {
			return nil, fmt.Errorf("src/client.ts:%d: %w", i+1, err)
		}
		var ps []param
		for _, s := range splitTop(sig, true) {
			name, typ, _ := strings.Cut(s, ":")
			name = strings.TrimSuffix(strings.TrimSpace(name), "?")
			typ, _, _ = strings.Cut(typ, " = ")
			ps = append(ps, param{Name: name, Type: strings.TrimSpace(typ)})
		}
		methods[m[1]] = method{Name: m[1], Params: ps, Where: fmt.Sprintf("client.ts:%d", i+1)}
	}

	aliases := map[string][2]string{} // name → schema, or query's operation
	interfaces := map[string][]string{}
	srcs, err := filepath.Glob(filepath.Join(dir, "src", "*.ts"))
	if err != nil {
		return nil, err
	}
	for _, path := range srcs {
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, m := range tsAlias.FindAllStringSubmatch(string(text), -1) {
			aliases[m[1]] = [2]string{m[2], m[3]}
		}
		for _, m := range tsInterface.FindAllStringSubmatch(string(text), -1) {
			names := strings.Fields(strings.ReplaceAll(m[2], ",", " "))
			for _, mm := range tsMember.FindAllStringSubmatch(m[3], -1) {
				names = append(names, mm[1])
			}
			interfaces[m[1]] = names
		}
	}
	var says func(c *contract, p param) []string
	says = func(c *contract, p param) []string {
		var out []string
		for _, m := range tsInline.FindAllStringSubmatch(p.Type, -1) {
			out = append(out, m[1])
		}
		for _, id := range tsIdent.FindAllString(p.Type, -1) {
			if a, ok := aliases[id]; ok {
				if a[0] != "" {
					out = append(out, c.schema(a[0])...)
				}
				for _, op := range c.Ops {
					if op.ID == a[1] {
						out = append(out, op.Query...)
					}
				}
			}
			for _, n := range interfaces[id] {
				out = append(out, n)
				if _, ok := interfaces[n]; ok {
					out = append(out, says(c, param{Type: n})...)
				}
			}
		}
		return out
	}
	return &client{Lang: "TypeScript", name: func(s string) string { return s }, methods: methods, says: says}, nil
}

// ---- Python -------------------------------------------------------------------

var (
	pyMethod    = regexp.MustCompile(`^    def ([a-z]\w*)\(`)
	pyTypedDict = regexp.MustCompile(`(?m)^class (\w+)\(([^)]*)\):\n((?:(?:    .*)?\n)*)`)
	pyField     = regexp.MustCompile(`(?m)^    ([a-z]\w*): `)
	pyIdent     = regexp.MustCompile(`\b[A-Z]\w*`)
)

// parsePython reads the methods of class Client in logbook/client.py and
// the TypedDicts of logbook/types.py (a parameter of one takes its keys).
func parsePython(dir string) (*client, error) {
	src, err := os.ReadFile(filepath.Join(dir, "logbook", "client.py"))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(src), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "class Client") })
	if start < 0 {
		return nil, fmt.Errorf("no class Client in logbook/client.py")
	}
	methods := map[string]method{}
	for i := start + 1; i < len(lines); i++ {
		if l := lines[i]; l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "#") {
			break // the class ends
		}
		m := pyMethod.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		sig, err := signature(strings.Join(lines[i:], "\n"), false)
		if err != nil {
			return nil, fmt.Errorf("logbook/client.py:%d: %w", i+1, err)
		}
		me := method{Name: m[1], Where: fmt.Sprintf("client.py:%d", i+1)}
		for _, s := range splitTop(sig, false) {
			name, typ, _ := strings.Cut(s, ":")
			name, _, _ = strings.Cut(name, "=")
			name = strings.TrimSpace(name)
			typ, _, _ = strings.Cut(typ, " = ")
			switch {
			case name == "self" || name == "*" || name == "/":
			case strings.HasPrefix(name, "**"):
				me.AnyKeyword = true
			case strings.HasPrefix(name, "*"):
			default:
				me.Params = append(me.Params, param{Name: name, Type: strings.TrimSpace(typ)})
			}
		}
		methods[m[1]] = me
	}
	typesSrc, err := os.ReadFile(filepath.Join(dir, "logbook", "types.py"))
	if err != nil {
		return nil, err
	}
	dicts := map[string][]string{} // TypedDict → its keys and its bases
	for _, m := range pyTypedDict.FindAllStringSubmatch(string(typesSrc), -1) {
		keys := pyIdent.FindAllString(m[2], -1)
		for _, f := range pyField.FindAllStringSubmatch(m[3], -1) {
			keys = append(keys, f[1])
		}
		dicts[m[1]] = keys
	}
	var keysOf func(name string) []string
	keysOf = func(name string) []string {
		var out []string
		for _, k := range dicts[name] {
			if _, ok := dicts[k]; ok {
				out = append(out, keysOf(k)...)
			} else {
				out = append(out, k)
			}
		}
		return out
	}
	says := func(_ *contract, p param) []string {
		var out []string
		for _, id := range pyIdent.FindAllString(p.Type, -1) {
			out = append(out, keysOf(id)...)
		}
		return out
	}
	return &client{Lang: "Python", name: pythonName, methods: methods, says: says}, nil
}

// ---- signatures ---------------------------------------------------------------

// signature is the text between the first "(" of src and the ")" that
// closes it.
func signature(src string, ts bool) (string, error) {
	open := strings.IndexByte(src, '(')
	depth := 0
	var quote byte
	for i := open; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == quote && src[i-1] != '\\' {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{' || ts && c == '<':
			depth++
		case c == ')' || c == ']' || c == '}' || ts && c == '>' && src[i-1] != '=':
			depth--
			if depth == 0 {
				return src[open+1 : i], nil
			}
		}
	}
	return "", fmt.Errorf("no end to the parameters")
}

// splitTop splits a parameter list at its top-level commas.
func splitTop(s string, ts bool) []string {
	var out []string
	depth, last := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote && s[i-1] != '\\' {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{' || ts && c == '<':
			depth++
		case c == ')' || c == ']' || c == '}' || ts && c == '>' && s[i-1] != '=':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[last:i])
			last = i + 1
		}
	}
	out = append(out, s[last:])
	var kept []string
	for _, p := range out {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return kept
}

// schema is a schema's properties by its name in some client's case.
func (c *contract) schema(name string) []string {
	for n, props := range c.Schemas {
		if norm(n) == norm(name) {
			return props
		}
	}
	return nil
}
