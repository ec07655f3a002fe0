package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestProjectPathsExpandHome: `checkout = "~/click"` is the home's click,
// as `read_only = ["~/..."]` is; it used to be taken as a directory named
// "~" in the workspace root. `python = "~/..."` likewise.
func TestProjectPathsExpandHome(t *testing.T) {
	home := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(home, "click", ".venv", "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, "click", ".venv", "bin", "python"), []byte("#!/bin/sh\n"), 0o755))
	cfg := workspace(t, "[project]\ncheckout = \"~/click\"\npython = \"~/click/.venv/bin/python\"\n")
	host := fakeHost(t)
	host.Home = home
	p, err := Build(cfg, profiles.RoleReproducer, host, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(home, "click"))
	var checkout, env bool
	for _, m := range p.Mounts {
		checkout = checkout || m.Path == want && m.Why == "project checkout"
		env = env || m.Path == filepath.Join(want, ".venv") && m.Why == "python environment"
	}
	if !checkout || !env {
		t.Errorf("checkout mounted %v, python environment %v: %+v (warnings %q)", checkout, env, p.Mounts, p.Warnings)
	}
}

// TestPythonNotFoundSaysWhereItLooked: a relative [project] python
// resolves against the workspace root; the warning names the path it
// tried and why there, and the path to write when the checkout has it.
func TestPythonNotFoundSaysWhereItLooked(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\npython = \".venv/bin/python\"\n")
	checkout := filepath.Join(filepath.Dir(cfg.Root), "widgets")
	must(t, os.MkdirAll(filepath.Join(checkout, ".venv", "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(checkout, ".venv", "bin", "python"), []byte("#!/bin/sh\n"), 0o755))
	p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, w := range p.Warnings {
		if strings.Contains(w, "[project] python") {
			got = w
		}
	}
	for _, want := range []string{
		`[project] python ".venv/bin/python" not found at ` + filepath.Join(cfg.Root, ".venv/bin/python"),
		"a relative path resolves against the workspace root " + cfg.Root,
		`the checkout has one: python = "../widgets/.venv/bin/python"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warning %q lacks %q", got, want)
		}
	}
}
