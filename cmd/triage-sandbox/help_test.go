package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
)

// TestBackendHelp: the help of every command that chooses or checks a
// backend names every registered one with its summary, and --backend's
// own line lists them all, so no backend can be left out of a help text.
func TestBackendHelp(t *testing.T) {
	reg := builtin.Registry()
	for _, tc := range []struct {
		command     string
		backendFlag bool
	}{
		{"run", true}, {"check", true}, {"render", true}, {"policy", true}, {"selftest", true}, {"doctor", false},
	} {
		t.Run(tc.command, func(t *testing.T) {
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs([]string{tc.command, "--help"})
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			help := out.String()
			var flagLine string
			for _, l := range strings.Split(help, "\n") {
				if strings.Contains(l, "--backend string") {
					flagLine = l
				}
			}
			if tc.backendFlag && flagLine == "" {
				t.Fatalf("no --backend flag in:\n%s", help)
			}
			for _, name := range reg.Names() {
				if !strings.Contains(help, name+"  ") || !strings.Contains(help, reg.Summary(name)) {
					t.Errorf("help lacks %s and its summary:\n%s", name, help)
				}
				if tc.backendFlag && !strings.Contains(flagLine, name) {
					t.Errorf("--backend help lacks %s: %s", name, flagLine)
				}
			}
		})
	}
}

func TestOrList(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"docker"}, "docker"},
		{[]string{"docker", "oci"}, "docker or oci"},
		{[]string{"docker", "local", "oci"}, "docker, local or oci"},
	} {
		if got := orList(tc.in); got != tc.want {
			t.Errorf("orList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRootFor: a command line naming a subcommand builds that one alone,
// under its own name; anything else builds them all; and the table names
// each subcommand under the name it answers to.
func TestRootFor(t *testing.T) {
	all := newRootCmd().Commands()
	if len(all) != len(subcommands) {
		t.Fatalf("%d subcommands built, %d in the table", len(all), len(subcommands))
	}
	for _, sc := range subcommands {
		root := newRootCmdFor([]string{sc.name, "--help"})
		cmds := root.Commands()
		if len(cmds) != 1 || cmds[0].Name() != sc.name {
			t.Errorf("%s: built %d commands (first %q), want %s alone", sc.name, len(cmds), cmds[0].Name(), sc.name)
		}
	}
	for _, args := range [][]string{nil, {"help"}, {"help", "run"}, {"--help"}, {"completion", "bash"}, {"rnu"}} {
		if n := len(newRootCmdFor(args).Commands()); n != len(all) {
			t.Errorf("%q: built %d commands, want all %d", args, n, len(all))
		}
	}
}
