package main

import (
	"os"
	"regexp"
	"testing"
)

// docs/guides/configuration.md's table names every flag the server has, each
// with its variable, and no flag it does not have.
func TestConfigurationGuideListsEveryFlag(t *testing.T) {
	md, err := os.ReadFile("../../docs/guides/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // flag → variable
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| `([A-Z_]+)` \\|").FindAllStringSubmatch(string(md), -1) {
		documented[m[1]] = m[2]
	}
	flags := globalFlags(envOf())
	for _, f := range flags {
		name := f.Names()[0]
		var env string
		if s, ok := f.(interface{ GetEnvVars() []string }); ok && len(s.GetEnvVars()) > 0 {
			env = s.GetEnvVars()[0]
		}
		got, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("the guide does not list --%s", name)
		case got != env:
			t.Errorf("the guide gives --%s the variable %s; the flag reads %s", name, got, env)
		}
		delete(documented, name)
	}
	for name := range documented {
		t.Errorf("the guide lists --%s, which the server does not have", name)
	}
	if len(flags) < 30 {
		t.Errorf("%d flags; the server has more", len(flags))
	}
}
