// Command parity checks that the three clients (Go, TypeScript, Python)
// have a method for every operation of openapi.yaml, named alike and taking
// alike parameters, and writes the table of them, clients/PARITY.md:
//
//	go generate ./tools/parity
//
// Its test (go test ./tools/parity, part of make test) fails on any gap and
// when the committed table is not what this writes now.
package main

//go:generate go run . -write

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

const tableFile = "clients/PARITY.md"

func main() {
	write := flag.Bool("write", false, "write "+tableFile)
	flag.Parse()
	root, err := findRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p, err := run(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *write {
		if err := os.WriteFile(filepath.Join(root, tableFile), []byte(render(p)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, pr := range p.Problems {
		fmt.Fprintln(os.Stderr, pr)
	}
	if len(p.Problems) > 0 {
		os.Exit(1)
	}
}

// findRoot is the repository: the nearest directory up from here with
// openapi.yaml (go generate and go test run in this package's directory,
// go run wherever it is called).
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "openapi.yaml")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no openapi.yaml in any directory above this one")
		}
		dir = up
	}
}

// run reads the contract and the three clients under root and compares them.
func run(root string) (parity, error) {
	data, err := os.ReadFile(filepath.Join(root, "openapi.yaml"))
	if err != nil {
		return parity{}, err
	}
	c, err := loadContract(data)
	if err != nil {
		return parity{}, err
	}
	ts, err := parseTypeScript(filepath.Join(root, "clients", "typescript"))
	if err != nil {
		return parity{}, err
	}
	py, err := parsePython(filepath.Join(root, "clients", "python"))
	if err != nil {
		return parity{}, err
	}
	gocl, err := parseGo(filepath.Join(root, "client"))
	if err != nil {
		return parity{}, err
	}
	return check(c, []*client{ts, py, gocl}), nil
}
