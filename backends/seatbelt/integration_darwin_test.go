package seatbelt

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/sbpl"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/hostprep"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// These tests run the rendered profiles under the real sandbox-exec.

const canaryToken = "triage-seatbelt-canary-7f3a"

// rig is one started sandbox over a fake home with canaries and a
// workspace holding the probe.
type rig struct {
	t                *testing.T
	home, root, tool string
	p                *policy.Policy
	b                *Backend
	sb               backends.Sandbox
}

func skipIfNested(t *testing.T) {
	t.Helper()
	out, err := exec.Command(SandboxExec, "-p", "(version 1)(allow default)", "/usr/bin/true").CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "sandbox_apply") {
			t.Skipf("this process is sandboxed already (nested sandboxes are refused): %s", out)
		}
		t.Fatalf("sandbox-exec does not run: %v: %s", err, out)
	}
}

// newRig builds the probe, plants canaries in a fake home and starts a
// sandbox for role; layout "in-home" puts the workspace in the home,
// "is-home" makes the home the workspace.
func newRig(t *testing.T, role profiles.Role, layout string) *rig {
	t.Helper()
	return newRigWith(t, role, layout, "", nil)
}

// newRigWith is newRig with extra TOML after the [sandbox] table and,
// when run is set, the policy the backend starts with made by run (the
// run path's part: the network proxy).
func newRigWith(t *testing.T, role profiles.Role, layout, extra string, run func(p *policy.Policy) *policy.Policy) *rig {
	t.Helper()
	skipIfNested(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, home: filepath.Join(base, "home dir [x]")}
	r.root = filepath.Join(r.home, "work space")
	if layout == "is-home" {
		r.root = r.home
	}
	mustWrite(t, filepath.Join(r.home, ".ssh", "id_canary"), canaryToken)
	mustWrite(t, filepath.Join(r.home, ".config", "gh", "hosts.yml"), canaryToken)
	mustWrite(t, filepath.Join(r.home, "Documents", "private.txt"), canaryToken)
	for _, w := range profiles.Writable(role) {
		if strings.HasSuffix(w, ".md") {
			mustWrite(t, filepath.Join(r.root, w), "")
		} else {
			mustMkdir(t, filepath.Join(r.root, w))
		}
	}
	r.tool = filepath.Join(r.root, "tools", "netprobe")
	goBuild(t, r.tool, "./testdata/netprobe")
	self := filepath.Join(base, "bin", "triage-sandbox")
	goBuild(t, self, "./testdata/exechelper")
	cfgPath := filepath.Join(r.root, "triage.toml")
	mustWrite(t, cfgPath, extra)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	host := policy.Host{Home: r.home, Env: []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + r.home, "GITHUB_TOKEN=" + canaryToken},
		OS: "darwin", UID: os.Getuid(), GID: os.Getgid(), Cwd: r.root}
	mustWrite(t, cfgPath, "[sandbox]\naccept_weaker = "+acceptList(lacking(t, cfg, role, host))+"\n"+extra)
	if cfg, err = config.Load(cfgPath); err != nil {
		t.Fatal(err)
	}
	if r.p, err = policy.Build(cfg, role, host, policy.Options{Backend: Name, Capabilities: Capabilities()}); err != nil {
		t.Fatal(err)
	}
	if err := hostprep.Writable(r.p); err != nil {
		t.Fatal(err)
	}
	if r.b, err = NewWithOptions(backends.Env{SelfExe: self}, Options{StateDir: filepath.Join(base, "state")}); err != nil {
		t.Fatal(err)
	}
	started := r.p
	if run != nil {
		started = run(r.p)
	}
	if r.sb, err = r.b.Start(context.Background(), started, backends.StartOptions{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := r.sb.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

// goBuild builds a package of this directory's testdata to out.
func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	build := exec.Command("go", "build", "-o", out, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v: %s", pkg, err, b)
	}
}

// run runs argv in the sandbox and returns its exit code and output.
func (r *rig) run(timeout time.Duration, argv ...string) (backends.Result, string) {
	r.t.Helper()
	var out bytes.Buffer
	res, err := r.sb.Exec(context.Background(), backends.Command{Argv: argv, Timeout: timeout}, backends.Streams{Stdout: &out, Stderr: &out})
	if err != nil {
		r.t.Fatalf("Exec %q: %v", argv, err)
	}
	return res, out.String()
}

func (r *rig) probe(action, arg string) (bool, string) {
	r.t.Helper()
	res, out := r.run(30*time.Second, r.tool, action, arg)
	return res.ExitCode == 0 && strings.HasPrefix(out, "ok"), strings.TrimSpace(out)
}

// control runs the probe outside the sandbox: a check whose control cannot
// do it proves nothing.
func (r *rig) control(action, arg string) {
	r.t.Helper()
	out, err := exec.Command(r.tool, action, arg).CombinedOutput()
	if err != nil {
		r.t.Fatalf("control %s %s failed outside the sandbox: %v: %s", action, arg, err, out)
	}
}

func TestDarwinCredentialCanaries(t *testing.T) {
	for _, role := range profiles.Roles() {
		for _, layout := range []string{"in-home", "is-home"} {
			t.Run(string(role)+"/"+layout, func(t *testing.T) {
				r := newRig(t, role, layout)
				secrets := []string{".ssh/id_canary", ".config/gh/hosts.yml"}
				if layout == "in-home" {
					// Outside the allow-list (when the home is the workspace, it is readable by design).
					secrets = append(secrets, "Documents/private.txt")
				}
				for _, rel := range secrets {
					path := filepath.Join(r.home, rel)
					r.control("read", path)
					if ok, out := r.probe("read", path); ok || strings.Contains(out, canaryToken) {
						t.Errorf("read %s inside the sandbox: %s", rel, out)
					}
				}
				res, out := r.run(10*time.Second, "/usr/bin/env")
				if res.ExitCode != 0 || strings.Contains(out, canaryToken) {
					t.Errorf("env: exit %d, the canary token leaked: %v", res.ExitCode, strings.Contains(out, canaryToken))
				}
				// The move bypass: rename the credential directory, or its parent, away.
				for _, from := range []string{filepath.Join(r.home, ".ssh"), filepath.Join(r.home, ".config")} {
					if res, out := r.run(10*time.Second, "/bin/mv", from, filepath.Join(r.root, "repros", "moved")); res.ExitCode == 0 {
						t.Errorf("mv %s succeeded: %s", from, out)
					}
					if _, err := os.Stat(from); err != nil {
						t.Errorf("%s was moved: %v", from, err)
					}
				}
				if res, out := r.run(10*time.Second, "/bin/ln", filepath.Join(r.home, ".ssh", "id_canary"), filepath.Join(r.root, "repros", "hard")); res.ExitCode == 0 {
					t.Errorf("hard link of the canary succeeded: %s", out)
				}
			})
		}
	}
}

func TestDarwinWrites(t *testing.T) {
	r := newRig(t, profiles.RoleReproducer, "in-home")
	repro := filepath.Join(r.root, "repros", "out.txt")
	script := `echo ok > "$1" && echo h > "$HOME/h" && echo t > "$TMPDIR/t" && cat "$HOME/h" "$TMPDIR/t"`
	res, out := r.run(20*time.Second, "/bin/sh", "-c", script, "sh", repro)
	if res.ExitCode != 0 || !strings.Contains(out, "h\nt") {
		t.Fatalf("writing the outputs and scratch: exit %d: %s", res.ExitCode, out)
	}
	if b, err := os.ReadFile(repro); err != nil || string(b) != "ok\n" {
		t.Errorf("the host does not see the output: %q, %v", b, err)
	}
	for _, p := range []string{filepath.Join(r.root, "evil.txt"), filepath.Join(r.home, ".zshrc"), filepath.Join(r.root, "triage.toml"), "/tmp/triage-seatbelt-evil"} {
		if ok, out := r.probe("write", p); ok {
			t.Errorf("wrote %s: %s", p, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(r.root, "triage.toml")); strings.Contains(string(b), "netprobe") {
		t.Error("the config was overwritten")
	}
	if res, _ := r.run(10*time.Second, "/bin/sh", "-c", "exit 3"); res.ExitCode != 3 {
		t.Errorf("exit code %d, want 3", res.ExitCode)
	}
	if res, _ := r.run(10*time.Second, "no-such-command-xyz"); res.ExitCode != 127 {
		t.Errorf("a missing command exits %d, want 127", res.ExitCode)
	}
	start := time.Now()
	if res, _ := r.run(time.Second, "/bin/sleep", "30"); !res.TimedOut || res.ExitCode != 124 || time.Since(start) > 15*time.Second {
		t.Errorf("timeout: %+v after %s", res, time.Since(start))
	}
}

func TestDarwinNetwork(t *testing.T) {
	// Listeners started before the sandbox: the host's own services.
	var hits atomic.Int64
	listen := func(addr string) net.Listener {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				hits.Add(1)
				c.Close()
			}
		}()
		return ln
	}
	loop := listen("127.0.0.1:0")
	var lan net.Listener
	if ip := ownAddress(t); ip != "" {
		lan = listen(net.JoinHostPort(ip, "0"))
	}
	r := newRig(t, profiles.RoleReproducer, "in-home")
	r.control("udp", "1.1.1.1:53")
	for _, addr := range []string{"1.1.1.1:53", "[2606:4700:4700::1111]:53", "169.254.169.254:80"} {
		if ok, out := r.probe("udp", addr); ok {
			t.Errorf("a route to %s inside the sandbox: %s", addr, out)
		}
	}
	if ok, out := r.probe("serve", "127.0.0.1:0"); !ok {
		t.Errorf("the sandbox's own server on loopback: %s", out)
	}
	targets := []string{loop.Addr().String()}
	if lan != nil {
		targets = append(targets, lan.Addr().String())
	}
	for _, addr := range targets {
		r.control("tcp", addr)
		before := hits.Load()
		if ok, out := r.probe("tcp", addr); ok || hits.Load() != before {
			t.Errorf("reached the host's listener %s: %s (hits %d)", addr, out, hits.Load()-before)
		}
	}
	if ok, out := r.probe("unix", "/var/run/mDNSResponder"); ok {
		t.Errorf("reached mDNSResponder (DNS): %s", out)
	}
	// Where a server may listen: measured, and the evaluator must agree.
	prof := r.compiled()
	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0", "[::]:0", "[::1]:0"} {
		host, _, _ := net.SplitHostPort(addr)
		req := sbpl.Request{Op: "network-bind", Local: &sbpl.Addr{Proto: "tcp", IP: netip.MustParseAddr(host)}}
		d, err := prof.Decide(req, sbpl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		kernel, out := r.probe("listen", addr)
		t.Logf("listen %s: kernel %v (%s), evaluator %s", addr, kernel, out, d)
		if kernel != d.Allow {
			t.Errorf("listen %s: the kernel says %v, the evaluator %s", addr, kernel, d)
		}
	}
}

// compiled is the sandbox's current profile in the evaluator.
func (r *rig) compiled() *sbpl.Profile {
	r.t.Helper()
	art, err := r.sb.(*box).render(context.Background(), backends.Command{Argv: []string{"true"}}, "")
	if err != nil {
		r.t.Fatal(err)
	}
	prof, err := sbpl.Compile(art.Profile, art.Params)
	if err != nil {
		r.t.Fatal(err)
	}
	return prof
}

// ownAddress is this machine's first non-loopback IPv4 address, or "".
func ownAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestDarwinEvaluatorAgrees runs one matrix through the evaluator and
// through the kernel: a disagreement means the evaluator's semantics are
// wrong somewhere the property tests rely on.
func TestDarwinEvaluatorAgrees(t *testing.T) {
	r := newRig(t, profiles.RoleAgent, "in-home")
	s := r.sb.(*box)
	prof := r.compiled()
	canon := func(p string) string {
		c, err := HostResolver().Canonical(p)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cases := []struct{ action, path, op string }{
		{"read", filepath.Join(r.home, ".ssh", "id_canary"), "file-read-data"},
		{"read", filepath.Join(r.home, "Documents", "private.txt"), "file-read-data"},
		{"read", filepath.Join(r.root, "triage.toml"), "file-read-data"},
		{"read", "/etc/hosts", "file-read-data"},
		{"write", filepath.Join(r.root, "repros", "agree.txt"), "file-write-create"},
		{"write", filepath.Join(r.root, "agree.txt"), "file-write-create"},
		{"write", filepath.Join(r.home, "agree.txt"), "file-write-create"},
		{"write", filepath.Join(s.scratch.Tmp, "agree.txt"), "file-write-create"},
	}
	for _, semantics := range []sbpl.Options{{}, {LastMatchOnly: true}, {DenyWins: true}} {
		for _, c := range cases {
			d, err := prof.Decide(sbpl.Request{Op: c.op, Path: canon(c.path)}, semantics)
			if err != nil {
				t.Fatal(err)
			}
			kernel, out := r.probe(c.action, c.path)
			if kernel != d.Allow {
				t.Errorf("%s %s: the kernel says %v (%s), the evaluator %s (%+v)", c.action, c.path, kernel, out, d, semantics)
			}
		}
	}
}

// TestDarwinAllowList: with a network allow-list the command reaches the
// run's egress proxy (the real one, on a port of the host's loopback,
// asking for the run's secret) through its proxy variables, and nothing
// else: not another port of this host, not its own server, not DNS, no
// route off the machine. The proxy refuses a name not on the list before
// anything is resolved or dialled.
func TestDarwinAllowList(t *testing.T) {
	var hits atomic.Int64
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	var px *egress.Proxy
	startProxy := func(p *policy.Policy) *policy.Policy {
		secret, err := egress.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		px, err = egress.Serve(context.Background(), egress.Config{Rules: p.Network.Rules, Secret: secret,
			Resolver: failResolver{t}, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				t.Errorf("the proxy dialled %s %s", network, addr)
				return nil, errors.New("no dial in this test")
			}}, ln)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { px.Close() })
		cp := *p
		cp.Network.HostProxy = &policy.HostProxy{Port: ln.Addr().(*net.TCPAddr).Port, Secret: secret}
		return &cp
	}
	r := newRigWith(t, profiles.RoleReproducer, "in-home", "[sandbox.reproducer]\nnetwork = [\"files.example.org\"]\n", startProxy)
	if ok, out := r.probe("proxyget", "http://nothing.invalid/"); !ok || !strings.Contains(out, "403") || !strings.Contains(out, "not on the network allow-list") {
		t.Errorf("a name not on the list through the proxy: %s; want the proxy's 403", out)
	}
	var refused bool
	for _, d := range px.Decisions() {
		refused = refused || (d.Host == "nothing.invalid" && !d.Allowed)
		if !d.Allowed && d.Host == "" {
			t.Errorf("the command's request lacked the run's credentials: %+v", d)
		}
	}
	if !refused {
		t.Errorf("decisions %+v, want nothing.invalid refused", px.Decisions())
	}
	r.control("tcp", other.Addr().String())
	before := hits.Load()
	if ok, out := r.probe("tcp", other.Addr().String()); ok || hits.Load() != before {
		t.Errorf("reached another port of this host %s: %s", other.Addr(), out)
	}
	if ok, out := r.probe("serve", "127.0.0.1:0"); ok {
		t.Errorf("connected to its own server on loopback (the allow-list allows the proxy's port alone): %s", out)
	}
	if ok, out := r.probe("udp", "1.1.1.1:53"); ok {
		t.Errorf("a route off the machine: %s", out)
	}
	if ok, out := r.probe("unix", "/var/run/mDNSResponder"); ok {
		t.Errorf("reached mDNSResponder (DNS): %s", out)
	}
}

// failResolver fails the test on any lookup: a name not on the list is
// refused before one.
type failResolver struct{ t *testing.T }

func (f failResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.t.Errorf("the proxy looked up %q", host)
	return nil, errors.New("no lookup in this test")
}
