package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/kubernetes/kubecaps"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// TestDefaultBinaryHasNoClientGo: the default binary links no k8s.io
// package (client-go made start-up 1.28x slower and the binary 12 MB
// bigger); the kubernetes backend is in the second binary only.
func TestDefaultBinaryHasNoClientGo(t *testing.T) {
	if bin, _ := builtin.Registry().Elsewhere(kubecaps.Name); bin == "" {
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
	if bin, _ := builtin.Registry().Elsewhere(kubecaps.Name); bin == "" {
		t.Skip("built with the kubernetes tag: nothing to hand off")
	}
	dir, self := binaryCopy(t)
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
	if bin, _ := builtin.Registry().Elsewhere(kubecaps.Name); bin == "" {
		t.Skip("built with the kubernetes tag: this is the second binary")
	}
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // not the machine's own install
	self := filepath.Join(dir, "triage-sandbox")
	if err := os.WriteFile(self, []byte("self"), 0o755); err != nil {
		t.Fatal(err)
	}
	detail, ok := elsewhereDetail(builtin.Registry(), "kubernetes", self)
	if !ok || !strings.Contains(detail, "build it with `TRIAGE_SANDBOX_KUBE=1 scripts/setup.sh`") {
		t.Errorf("no sibling: %q lacks how to build it", detail)
	}
	kube := filepath.Join(dir, "triage-sandbox-kube")
	if err := os.WriteFile(kube, []byte("kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	detail, ok = elsewhereDetail(builtin.Registry(), "kubernetes", self)
	want := "compiled into " + kube + ": `--backend kubernetes` (or [sandbox] backend = \"kubernetes\") hands the run over to it; `triage-sandbox-kube doctor` checks the cluster"
	if !ok || detail != want {
		t.Errorf("beside it:\n got  %q (%v)\n want %q", detail, ok, want)
	}
	if _, ok := elsewhereDetail(builtin.Registry(), "docker", self); ok {
		t.Error("docker is not elsewhere")
	}
}

// TestHandOffTarget: the hand-over is decided from the compiled policies
// and the registry's data alone: the first policy whose backend's entry
// names another binary, none when this one has every backend.
func TestHandOffTarget(t *testing.T) {
	reg := backends.NewRegistry()
	reg.Register(backends.Entry{Name: "here"})
	reg.Register(backends.Entry{Name: "far", Binary: "far-bin", GetBinary: "build far-bin"})
	pol := func(b string) *policy.Policy { return &policy.Policy{Backend: b} }
	for _, tt := range []struct {
		name     string
		policies []*policy.Policy
		want     string
	}{
		{"none", nil, ""},
		{"all here", []*policy.Policy{pol("here"), pol("here")}, ""},
		{"one role far", []*policy.Policy{pol("here"), pol("far")}, "far-bin"},
		{"a role not compiled", []*policy.Policy{nil, pol("far")}, "far-bin"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			backend, bin, how := handOffTarget(reg, tt.policies...)
			if bin != tt.want || (bin != "" && (backend != "far" || how != "build far-bin")) {
				t.Errorf("handOffTarget = %q, %q, %q; want binary %q", backend, bin, how, tt.want)
			}
		})
	}
}

// TestGCDelegatesElsewhere: gc in the default binary has the binary that
// has the kubernetes backend sweep it (`gc --backend kubernetes`), passing
// on its removals neutralised and its refusal as one line; without that
// binary it says so in one line, with how to build it.
func TestGCDelegatesElsewhere(t *testing.T) {
	testenv.SkipShort(t, "builds the binary")
	if bin, _ := builtin.Registry().Elsewhere(kubecaps.Name); bin == "" {
		t.Skip("built with the kubernetes tag: nothing to delegate")
	}
	dir, self := binaryCopy(t)
	gc := func() cliResult {
		cmd := exec.Command(self, "gc", "--backend", kubecaps.Name)
		cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
		out, err := cmd.Output()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return cliResult{ee.ExitCode(), string(out), string(ee.Stderr)}
		case err != nil:
			t.Fatal(err)
		}
		return cliResult{0, string(out), ""}
	}
	r := gc()
	if r.code != 125 || !strings.Contains(r.stderr, "gc: kubernetes: skipped: that backend is compiled into "+kubecaps.Binary) ||
		!strings.Contains(r.stderr, "-tags "+kubecaps.BuildTag) {
		t.Fatalf("without %s: %+v, want exit 125 and a line saying how to build it", kubecaps.Binary, r)
	}
	kube := filepath.Join(dir, kubecaps.Binary)
	args := filepath.Join(dir, "args")
	for _, c := range []struct {
		name, script string
		code         int
		stdout       string
		stderr       string
	}{
		{"sweeps", "echo \"$@\" > " + args + "; echo 'removed kubernetes ns/pod-1'; echo noise; echo 'triage-sandbox: gc removed 1' >&2",
			0, "removed kubernetes ns/pod-1\n", ""},
		{"neutralised", "printf 'removed kubernetes \\033]0;owned\\007x\\n'", 0, "removed kubernetes \u241b]0;owned\u2407x\n", ""},
		{"cannot run there", "echo 'triage-sandbox: no kubeconfig: set KUBECONFIG' >&2; exit 125", 125, "",
			"gc: kubernetes (by " + kube + "): skipped, it cannot run here: no kubeconfig: set KUBECONFIG"},
		{"fails", "echo 'triage-sandbox: kubernetes: listing pods: forbidden' >&2; exit 1", 1, "", "listing pods: forbidden"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(kube, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			r := gc()
			if r.code != c.code || r.stdout != c.stdout || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("%+v, want exit %d, stdout %q, stderr with %q", r, c.code, c.stdout, c.stderr)
			}
		})
	}
	if got, _ := os.ReadFile(args); string(got) != "gc --backend kubernetes\n" {
		t.Errorf("%s was asked %q", kubecaps.Binary, got)
	}
}

// binaryCopy is the CLI's binary copied into a directory of its own (the
// one its siblings are looked for in).
func binaryCopy(t *testing.T) (dir, self string) {
	t.Helper()
	dir = t.TempDir()
	self = filepath.Join(dir, "triage-sandbox")
	data, err := os.ReadFile(testenv.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, self
}
