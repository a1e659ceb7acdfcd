package main

import (
	"fmt"
	"slices"
	"strings"
)

// parity is what the check finds: each operation's methods in each client,
// and every way the clients fall short of the contract or of each other.
type parity struct {
	Rows     []row
	Problems []string
}

type row struct {
	Op      operation
	Methods [][]string // per client, the names of its methods for Op (nil: left out)
}

// check compares the three clients with the contract and with each other.
func check(c *contract, clients []*client) parity {
	var out parity
	bad := func(format string, args ...any) { out.Problems = append(out.Problems, fmt.Sprintf(format, args...)) }
	known := map[string]bool{}
	for _, op := range c.Ops {
		known[op.ID] = true
	}
	for _, op := range slices.Sorted(mapKeys(renamed)) {
		if !known[op] {
			bad("renamed lists %s, which openapi.yaml no longer has", op)
		}
	}
	for _, op := range slices.Sorted(mapKeys(leftOut)) {
		if !known[op] {
			bad("leftOut lists %s, which openapi.yaml no longer has", op)
		}
	}
	for _, op := range c.Ops {
		r := row{Op: op, Methods: make([][]string, len(clients))}
		out.Rows = append(out.Rows, r)
		if _, ok := leftOut[op.ID]; ok {
			continue
		}
		route := op.Method + " " + op.Path
		found := make([][]method, len(clients))
		for i, cl := range clients {
			for _, n := range methodNames(op.ID) {
				name := cl.name(n)
				r.Methods[i] = append(r.Methods[i], name)
				m, ok := cl.methods[name]
				if !ok {
					bad("%s has no %s for %s (%s)", cl.Lang, name, op.ID, route)
					continue
				}
				found[i] = append(found[i], m)
			}
		}
		// The path's parameters come first, named alike in the three.
		for j := range methodNames(op.ID) {
			var first []string
			for i, cl := range clients {
				if j >= len(found[i]) {
					continue
				}
				m := found[i][j]
				if len(m.Params) < len(op.PathParams) {
					bad("%s's %s (%s) takes %d parameters before its options; %s's path has %d", cl.Lang, m.Name, m.Where, len(m.Params), op.ID, len(op.PathParams))
					continue
				}
				var names []string
				for _, p := range m.Params[:len(op.PathParams)] {
					names = append(names, norm(p.Name))
				}
				if first == nil {
					first = names
				} else if !slices.Equal(names, first) {
					bad("%s's %s (%s) names the path's parameters %s; %s's method names them %s", cl.Lang, m.Name, m.Where,
						strings.Join(names, ", "), clients[0].Lang, strings.Join(first, ", "))
				}
			}
		}
		// Whatever the query and the body may say, each client lets its caller say.
		need := slices.Concat(op.Query, op.BodyProps)
		for i, cl := range clients {
			if len(found[i]) == 0 {
				continue
			}
			says := map[string]bool{}
			anything := false
			for _, m := range found[i] {
				says[norm(m.Name)] = true
				anything = anything || m.AnyKeyword
				for _, p := range m.Params {
					says[norm(p.Name)] = true
					for _, n := range cl.says(c, p) {
						says[norm(n)] = true
					}
				}
			}
			for _, n := range need {
				if anything || says[norm(n)] || spelledOtherwise(op.ID, n, says) {
					continue
				}
				bad("%s's %s (%s) cannot say %s (%s's %s)", cl.Lang, found[i][0].Name, found[i][0].Where, n, op.ID, partOf(op, n))
			}
		}
	}
	return out
}

func partOf(op operation, name string) string {
	if slices.Contains(op.Query, name) {
		return "query"
	}
	return "body"
}

// spelled are the parameters the clients take under another name (the
// same in the three), or that a method of their own stands for.
var spelled = map[string]map[string]string{
	"attachBlock":         {"as": "as_label"}, // as is a keyword in Python
	"closeSession":        {"purge": "purgeSession"},
	"streamSessionEvents": {"type": "types"},
	"streamEvents":        {"type": "types"},
}

func spelledOtherwise(op, name string, says map[string]bool) bool {
	alt, ok := spelled[op][name]
	return ok && says[norm(alt)]
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
