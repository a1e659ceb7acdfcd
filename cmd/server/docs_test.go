package main

import (
	"os"
	"regexp"
	"strings"
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

// No Docker engine runs in the tests, so the image and the compose file are
// read: the image builds cmd/server as logbook and runs it, and every
// LOGBOOK_ variable they set is one a flag reads (a misspelt one would be
// ignored without a word).
func TestDockerFilesRunLogbook(t *testing.T) {
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"-o /out/logbook ./cmd/server",
		"COPY --from=build /out/logbook /usr/local/bin/logbook",
		`ENTRYPOINT ["/usr/local/bin/logbook"]`,
		"-X main.version=${VERSION}",
	} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range globalFlags(envOf()) {
		if s, ok := f.(interface{ GetEnvVars() []string }); ok {
			for _, v := range s.GetEnvVars() {
				known[v] = true
			}
		}
	}
	for name, src := range map[string][]byte{"Dockerfile": dockerfile, "docker-compose.yml": compose} {
		vars := regexp.MustCompile(`\bLOGBOOK_[A-Z_]+\b`).FindAllString(string(src), -1)
		if len(vars) < 2 {
			t.Errorf("%s sets %d LOGBOOK_ variables; it sets more", name, len(vars))
		}
		for _, v := range vars {
			if !known[v] {
				t.Errorf("%s sets %s, which no flag reads", name, v)
			}
		}
	}
}
