package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fakeCommands is one stub for the commands the set-up scripts drive on a
// fresh machine; it logs each call ("name args...") to $FAKE_LOG and keeps
// the machine's state in $FAKE_STATE. apt-get "installs" a package by
// linking its commands into $FAKE_BIN; the daemon answers from the start
// (starting one would write the real machine's /var/log).
const fakeCommands = `#!/bin/bash
name=${0##*/}
echo "$name $*" >>"$FAKE_LOG"
provides() {
  case $1 in
    docker.io) echo docker dockerd containerd runc ;;
    etcd-server) echo etcd ;;
    nodejs) echo node ;;
    bubblewrap) echo bwrap ;;
    python3-pytest|containernetworking-plugins) ;;
    *) echo "$1" ;;
  esac
}
case $name in
  apt-get)
    [ "${FAKE_APT_FAIL:-0}" = 1 ] && exit 100
    for a in "$@"; do
      case $a in -*|install|update|env|DEBIAN_FRONTEND=*) continue ;; esac
      touch "$FAKE_STATE/pkg-$a"
      for c in $(provides "$a"); do ln -sf "$0" "$FAKE_BIN/$c"; done
    done ;;
  dpkg-query)
    # -W -f='${Status}' PKG
    [ -e "$FAKE_STATE/pkg-${*: -1}" ] || exit 1
    echo "install ok installed" ;;
  sudo) exec "$@" ;;
  go)
    [ "${FAKE_GO_FAIL:-0}" = 1 ] && { echo "fake compile error" >&2; exit 1; }
    if [ "$1 $2" = "mod download" ]; then
      mkdir -p "$FAKE_STATE/mod/k8s/crds" && touch "$FAKE_STATE/mod/k8s/crds/crd.yaml"
      echo "{\"Dir\": \"$FAKE_STATE/mod\"}"; exit 0
    fi
    out=
    while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
    if [ -n "$out" ]; then
      if [ "${out##*/}" = triage-sandbox ]; then ln -sf "$0" "$out"; else echo "#!/bin/sh" >"$out"; chmod +x "$out"; fi
    fi ;;
  triage-sandbox)
    # image build --base BASE --tag TAG
    [ "$1 $2" = "image build" ] && touch "$FAKE_STATE/image-${6//[\/:]/_}" ;;
  docker)
    case $1 in
      info|version) exit 0 ;;
      pull) exit 1 ;;
      image) [ -e "$FAKE_STATE/image-${3//[\/:]/_}" ]; exit ;;
      import) cat >/dev/null; tag=${*: -1}; touch "$FAKE_STATE/image-${tag//[\/:]/_}" ;;
    esac ;;
  podman) [ "$1 $2" != "image exists" ] || exit 1; cat >/dev/null ;;
  npm)
    while [ $# -gt 0 ]; do [ "$1" = --prefix ] && prefix=$2; pkg=$1; shift; done
    case "$pkg" in
      typescript@*) mkdir -p "$prefix/node_modules/typescript/bin" && touch "$prefix/node_modules/typescript/bin/tsc" ;;
      *) mkdir -p "$prefix/node_modules/@modelcontextprotocol/sdk" && echo '{}' >"$prefix/node_modules/@modelcontextprotocol/sdk/package.json" ;;
    esac ;;
esac
exit 0
`

// hostTools are the real programs the scripts use besides the stubs.
var hostTools = []string{"bash", "env", "dirname", "basename", "cat", "mkdir", "mktemp", "rm", "mv", "ln",
	"chmod", "touch", "seq", "sleep", "awk", "grep", "head", "tail", "id", "setsid", "timeout", "tar", "sed",
	"tr", "sort", "readlink", "date", "wc"}

// fakeMachine is a copy of scripts/ and images/ to run, and a PATH holding
// only the stubs and hostTools: no docker, debootstrap, chromium, runc,
// podman, containerd, etcd, jq or npm until apt-get installs them.
type fakeMachine struct {
	repo, bin, state, log, tmp string
}

func newFakeMachine(t *testing.T) *fakeMachine {
	t.Helper()
	root := t.TempDir()
	m := &fakeMachine{repo: filepath.Join(root, "repo"), bin: filepath.Join(root, "path"),
		state: filepath.Join(root, "state"), log: filepath.Join(root, "calls.log"), tmp: filepath.Join(root, "tmp")}
	for _, d := range []string{m.repo, m.bin, m.state, m.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"scripts", "images"} {
		if out, err := exec.Command("cp", "-r", filepath.Join("..", d), m.repo).CombinedOutput(); err != nil {
			t.Fatalf("copying %s: %v\n%s", d, err, out)
		}
	}
	fake := filepath.Join(root, "fake")
	if err := os.WriteFile(fake, []byte(fakeCommands), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"apt-get", "dpkg-query", "sudo", "go"} {
		if err := os.Symlink(fake, filepath.Join(m.bin, c)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range hostTools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(m.bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// run runs a script of the copy as a fresh machine would, with env added.
func (m *fakeMachine) run(t *testing.T, script string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(m.repo, "scripts", script))
	cmd.Env = append([]string{"PATH=" + m.bin, "HOME=" + m.tmp, "TMPDIR=" + m.tmp,
		"FAKE_LOG=" + m.log, "FAKE_STATE=" + m.state, "FAKE_BIN=" + m.bin,
		"TRIAGE_SANDBOX_KUBE_DIR=" + filepath.Join(m.tmp, "kube"),
		"TRIAGE_SANDBOX_GVISOR_DIR=" + filepath.Join(m.tmp, "gvisor"),
		"TRIAGE_SANDBOX_KUBE_ROUTER_DIR=" + filepath.Join(m.tmp, "kube-router"),
		"TRIAGE_SANDBOX_AGENT_SANDBOX_DIR=" + filepath.Join(m.tmp, "agent-sandbox")}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// calls are the logged calls of one program, each its arguments.
func (m *fakeMachine) calls(t *testing.T, name string) [][]string {
	t.Helper()
	data, err := os.ReadFile(m.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == name {
			out = append(out, f[1:])
		}
	}
	return out
}

// aptInstalls are the packages of each apt-get install call.
func (m *fakeMachine) aptInstalls(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	for _, c := range m.calls(t, "apt-get") {
		if !slices.Contains(c, "install") {
			continue
		}
		var pkgs []string
		for _, a := range c {
			if a != "install" && !strings.HasPrefix(a, "-") {
				pkgs = append(pkgs, a)
			}
		}
		out = append(out, pkgs)
	}
	return out
}

// goBuilds are the package paths each go build built.
func (m *fakeMachine) goBuilds(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, c := range m.calls(t, "go") {
		if len(c) > 0 && c[0] == "build" {
			out = append(out, strings.Join(c, " "))
		}
	}
	return out
}

func builds(list []string, pkg string) bool {
	return slices.ContainsFunc(list, func(b string) bool { return strings.HasSuffix(b, " "+pkg) })
}

// TestSetupMainJobOnly: on a fresh machine, the main job's set-up installs
// only what the selftest on docker needs, in one apt-get call, builds only
// the three binaries it runs (the front, the CLI, the inside one) and the image, and none of the tests' cluster
// binaries, runsc, the kubernetes binary or Podman's store (issue 34: these
// took the main job from 5 to 45 minutes).
func TestSetupMainJobOnly(t *testing.T) {
	m := newFakeMachine(t)
	out, err := m.run(t, "setup.sh")
	if err != nil {
		t.Fatalf("setup.sh: %v\n%s", err, out)
	}
	installs := m.aptInstalls(t)
	want := []string{"chromium", "debootstrap", "docker.io"}
	if len(installs) != 1 || !slices.Equal(slices.Sorted(slices.Values(installs[0])), want) {
		t.Errorf("apt-get installs %q, want one call with %q\n%s", installs, want, out)
	}
	b := m.goBuilds(t)
	if len(b) != 3 || !builds(b, "./cmd/triage-sandbox-front") || !builds(b, "./cmd/triage-sandbox") || !builds(b, "./cmd/triage-sandbox-inside") {
		t.Errorf("go builds %q, want ./cmd/triage-sandbox-front, ./cmd/triage-sandbox and ./cmd/triage-sandbox-inside only", b)
	}
	if n := len(m.calls(t, "podman")); n != 0 {
		t.Errorf("the main job's set-up called podman %d times", n)
	}
	if _, err := os.Stat(filepath.Join(m.tmp, "kube")); err == nil {
		t.Error("the main job's set-up made the kubernetes cluster's cache")
	}
	for _, img := range []string{"triage-sandbox-base_bookworm", "triage-sandbox_latest"} {
		if _, err := os.Stat(filepath.Join(m.state, "image-"+img)); err != nil {
			t.Errorf("image %s not built: %v\n%s", img, err, out)
		}
	}
	if !regexp.MustCompile(`(?m)^setup: ready in \d`).MatchString(out) {
		t.Errorf("no closing line with the set-up's time:\n%s", out)
	}
}

// TestSetupTestsOneAptCall: the tests' set-up installs every package the
// main job and the tests need in one apt-get call (each call pays an
// apt-get update), builds the kubernetes binary, the cluster's binaries and
// runsc and kube-router with a progress line saying how long each takes, loads Podman's
// store and installs the MCP client; a second run finds it all cached.
func TestSetupTestsOneAptCall(t *testing.T) {
	m := newFakeMachine(t)
	out, err := m.run(t, "setup-tests.sh")
	if err != nil {
		t.Fatalf("setup-tests.sh: %v\n%s", err, out)
	}
	installs := m.aptInstalls(t)
	if len(installs) != 1 {
		t.Fatalf("apt-get installs %q, want one call\n%s", installs, out)
	}
	if n := len(m.calls(t, "apt-get")); n != 2 {
		t.Errorf("apt-get called %d times, want an update and an install: %q", n, m.calls(t, "apt-get"))
	}
	for _, p := range []string{"docker.io", "debootstrap", "chromium", "runc", "podman", "containerd", "jq", "ipset", "nodejs", "npm", "bubblewrap"} {
		if !slices.Contains(installs[0], p) {
			t.Errorf("the one apt-get call lacks %s: %q", p, installs[0])
		}
	}
	b := m.goBuilds(t)
	for _, pkg := range []string{"./cmd/triage-sandbox-front", "./cmd/triage-sandbox", "./cmd/triage-sandbox-inside",
		"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kubelet", "gvisor.dev/gvisor/runsc",
		"github.com/cloudnativelabs/kube-router/v2/cmd/kube-router", "./cmd/agent-sandbox-controller"} {
		if !builds(b, pkg) {
			t.Errorf("no go build of %s: %q", pkg, b)
		}
	}
	if !slices.ContainsFunc(b, func(s string) bool { return strings.Contains(s, "-tags kubernetes") }) {
		t.Errorf("bin/triage-sandbox-kube not built: %q", b)
	}
	for _, step := range []string{"building kube-apiserver", "building kubelet", "building runsc", "building kube-router", "building agent-sandbox-controller", "loading triage-sandbox:latest into Podman"} {
		if !regexp.MustCompile(regexp.QuoteMeta(step) + `.*\(about \d+[^)]* min`).MatchString(out) {
			t.Errorf("no progress line with the expected time for %q:\n%s", step, out)
		}
	}
	// One install per npm package the tests use: the MCP client and tsc.
	if len(m.calls(t, "npm")) != 2 {
		t.Errorf("npm calls %q, want two installs (the MCP SDK, typescript)", m.calls(t, "npm"))
	}

	if err := os.Remove(m.log); err != nil {
		t.Fatal(err)
	}
	out, err = m.run(t, "setup-tests.sh")
	if err != nil {
		t.Fatalf("setup-tests.sh again: %v\n%s", err, out)
	}
	if c := m.calls(t, "apt-get"); len(c) != 0 {
		t.Errorf("a second run called apt-get: %q", c)
	}
	for _, b := range m.goBuilds(t) {
		if strings.Contains(b, "k8s.io/") || strings.Contains(b, "gvisor.dev/") {
			t.Errorf("a second run built %s again (not cached)", b)
		}
	}
	if c := m.calls(t, "npm"); len(c) != 0 {
		t.Errorf("a second run called npm: %q", c)
	}
}

// TestSetupFailsClosed: a failed build or apt-get fails the set-up, and
// the build's own output says why.
func TestSetupFailsClosed(t *testing.T) {
	for _, tc := range []struct{ name, env, want string }{
		{"build", "FAKE_GO_FAIL=1", "fake compile error"},
		{"apt", "FAKE_APT_FAIL=1", "installing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMachine(t)
			out, err := m.run(t, "setup.sh", tc.env)
			if err == nil || !strings.Contains(out, tc.want) || strings.Contains(out, "ready in") {
				t.Fatalf("setup.sh with %s: %v, want a failure saying %q\n%s", tc.env, err, tc.want, out)
			}
		})
	}
}
