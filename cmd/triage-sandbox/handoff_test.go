package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/kubernetes/kubecaps"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestDefaultBinaryHasNoClientGo: the default binary links no k8s.io
// package (client-go made start-up 1.28x slower and the binary 12 MB
// bigger); the kubernetes backend is in the second binary only.
func TestDefaultBinaryHasNoClientGo(t *testing.T) {
	if builtin.Elsewhere(kubecaps.Name) == "" {
		t.Skip("built with the kubernetes tag: this is the second binary")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/") || strings.HasSuffix(pkg, "/backends/kubernetes") {
			t.Errorf("the default binary imports %s", pkg)
		}
	}
	tagged, err := exec.Command("go", "list", "-deps", "-tags", kubecaps.BuildTag, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -tags %s: %v\n%s", kubecaps.BuildTag, err, tagged)
	}
	if !strings.Contains(string(tagged), "/backends/kubernetes\n") {
		t.Errorf("with -tags %s the binary still lacks backends/kubernetes", kubecaps.BuildTag)
	}
}

// TestHandOff: the default binary asked for the kubernetes backend (flag
// or config, by any command that runs sandboxes: run, selftest, mcp) becomes the second binary found beside it, with argv and
// environment unchanged; without one it refuses with one line saying how
// to build it, and never hands off to itself.
func TestHandOff(t *testing.T) {
	testenv.SkipShort(t, "builds the binary")
	if builtin.Elsewhere(kubecaps.Name) == "" {
		t.Skip("built with the kubernetes tag: nothing to hand off")
	}
	dir := t.TempDir()
	self := filepath.Join(dir, "triage-sandbox")
	data, err := os.ReadFile(testenv.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, data, 0o755); err != nil {
		t.Fatal(err)
	}
	weaker := "[sandbox]\naccept_weaker = [\"own_loopback\", \"pids_limit\"]\n"
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n"+weaker)
	run := func(env []string, args ...string) cliResult {
		cmd := exec.Command(self, args...)
		cmd.Dir = root
		cmd.Env = append(append(os.Environ(), "XDG_STATE_HOME="+stateDir(t), "PATH=/usr/bin:/bin", "HANDOFF_MARK=kept"), env...)
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
			return cliResult{code, string(out), string(ee.Stderr)}
		} else if err != nil {
			t.Fatal(err)
		}
		return cliResult{code, string(out), ""}
	}

	r := run(nil, "policy", "--role", "agent", "--backend", "kubernetes")
	if r.code != 125 || !strings.Contains(r.stderr, kubecaps.Binary) || !strings.Contains(r.stderr, "-tags "+kubecaps.BuildTag) ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("without %s: %+v, want exit 125 and one line saying how to build it", kubecaps.Binary, r)
	}
	if r := run(nil, "selftest", "--backend", "kubernetes"); r.code != 2 || !strings.Contains(r.stderr, kubecaps.Binary) {
		t.Fatalf("selftest without %s: %+v, want exit 2 (cannot run here) naming it", kubecaps.Binary, r)
	}

	fake := "#!/bin/sh\necho \"handed off: $0 $* $HANDOFF_MARK\"\n"
	if err := os.WriteFile(filepath.Join(dir, kubecaps.Binary), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		toml string
	}{
		{"flag", []string{"policy", "--role", "agent", "--backend", "kubernetes"}, ""},
		{"config", []string{"run", "--", "true"}, "[project]\ncheckout = \"../widgets\"\n" + weaker + "backend = \"kubernetes\"\n"},
		{"selftest", []string{"selftest", "--backend", "kubernetes", "--role", "agent"}, ""},
		// The MCP server too, when the config names the backend (it once
		// decided on the flag alone, then refused every run).
		{"mcp config", []string{"mcp"}, "[project]\ncheckout = \"../widgets\"\n" + weaker + "backend = \"kubernetes\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.toml != "" {
				if err := os.WriteFile(filepath.Join(root, "triage.toml"), []byte(c.toml), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := run(nil, c.args...)
			want := "handed off: " + filepath.Join(dir, kubecaps.Binary) + " " + strings.Join(c.args, " ") + " kept\n"
			if r.code != 0 || r.stdout != want {
				t.Fatalf("%+v, want stdout %q", r, want)
			}
		})
	}
	if r := run(nil, "policy", "--role", "agent", "--backend", "docker"); r.code != 0 || strings.Contains(r.stdout, "handed off") {
		t.Fatalf("another backend was handed off: %+v", r)
	}
}

// TestDoctorOnABackendElsewhere: doctor beside triage-sandbox-kube says
// a kubernetes run is handed over to it (it said "run
// triage-sandbox-kube instead", as if nothing would); without it, how to
// build it.
func TestDoctorOnABackendElsewhere(t *testing.T) {
	if builtin.Elsewhere(kubecaps.Name) == "" {
		t.Skip("built with the kubernetes tag: this is the second binary")
	}
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // not the machine's own install
	self := filepath.Join(dir, "triage-sandbox")
	if err := os.WriteFile(self, []byte("self"), 0o755); err != nil {
		t.Fatal(err)
	}
	detail, ok := elsewhereDetail("kubernetes", self)
	if !ok || !strings.Contains(detail, "build it with `TRIAGE_SANDBOX_KUBE=1 scripts/setup.sh`") {
		t.Errorf("no sibling: %q lacks how to build it", detail)
	}
	kube := filepath.Join(dir, "triage-sandbox-kube")
	if err := os.WriteFile(kube, []byte("kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	detail, ok = elsewhereDetail("kubernetes", self)
	want := "compiled into " + kube + ": `--backend kubernetes` (or [sandbox] backend = \"kubernetes\") hands the run over to it; `triage-sandbox-kube doctor` checks the cluster"
	if !ok || detail != want {
		t.Errorf("beside it:\n got  %q (%v)\n want %q", detail, ok, want)
	}
	if _, ok := elsewhereDetail("docker", self); ok {
		t.Error("docker is not elsewhere")
	}
}
