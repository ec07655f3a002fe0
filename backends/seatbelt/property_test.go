package seatbelt

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/sbpl"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// hostAddr is "this machine's LAN address" for the evaluator.
var hostAddr = netip.MustParseAddr("192.168.7.20")

// semantics are the readings of Seatbelt's precedence that have been
// reported: every property must hold under each.
var semantics = []struct {
	name string
	opts sbpl.Options
}{
	{"specific-op-wins", sbpl.Options{HostAddrs: []netip.Addr{hostAddr}}},
	{"last-match-only", sbpl.Options{HostAddrs: []netip.Addr{hostAddr}, LastMatchOnly: true}},
	{"deny-wins", sbpl.Options{HostAddrs: []netip.Addr{hostAddr}, DenyWins: true}},
}

// prover renders a policy and asks the evaluator about it; what does not
// hold is collected in errs.
type prover struct {
	t    *testing.T
	p    *policy.Policy
	in   Input
	art  *Artifact
	prof *sbpl.Profile
	opts sbpl.Options
	mode string
	errs []string
}

func (v *prover) errorf(format string, args ...any) {
	v.errs = append(v.errs, v.mode+": "+fmt.Sprintf(format, args...))
}

func newProver(t *testing.T, p *policy.Policy, in Input) *prover {
	t.Helper()
	art, err := Render(p, backends.Command{Argv: []string{"python3", "repro.py"}}, in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	prof, err := sbpl.Compile(art.Profile, art.Params)
	if err != nil {
		t.Fatalf("the evaluator refuses the rendered profile: %v\n%s", err, art.Profile)
	}
	return &prover{t: t, p: p, in: in, art: art, prof: prof}
}

func (v *prover) canon(p string) string {
	c, err := v.in.Canon.Canonical(p)
	if err != nil {
		v.t.Fatalf("Canonical(%q): %v", p, err)
	}
	return c
}

func (v *prover) expect(r sbpl.Request, allow bool, why string) {
	v.t.Helper()
	d, err := v.prof.Decide(r, v.opts)
	if err != nil {
		v.t.Fatalf("Decide(%+v): %v", r, err)
	}
	if d.Allow != allow {
		want := map[bool]string{true: "allowed", false: "denied"}[allow]
		v.errorf("%s: %s %s%s%s should be %s; %s", why, r.Op, r.Path, r.RemoteUnix, r.Name, want, d)
	}
}

func (v *prover) out(proto, ip string, port int) sbpl.Request {
	return sbpl.Request{Op: "network-outbound", Remote: &sbpl.Addr{Proto: proto, IP: netip.MustParseAddr(ip), Port: port}}
}

// fileOps are the operations every credential path is proved against.
var fileOps = []string{"file-read-data", "file-read-metadata", "file-read-xattr", "file-write-data", "file-write-unlink",
	"file-write-create", "file-write-mode", "file-link", "file-map-executable"}

// all runs every property under both precedence readings and returns
// what does not hold.
func (v *prover) all() []string {
	v.mode = "text"
	v.text()
	for _, s := range semantics {
		v.opts, v.mode = s.opts, s.name
		v.credentials()
		v.writable()
		v.readable()
		v.network()
		v.services()
	}
	return v.errs
}

// check fails t with every property that does not hold (at most 30).
func (v *prover) check() {
	v.t.Helper()
	errs := v.all()
	for i, e := range errs {
		if i == 30 {
			v.t.Errorf("... and %d more", len(errs)-30)
			break
		}
		v.t.Error(e)
	}
}

// text: what must never be in a profile, whatever it means.
func (v *prover) text() {
	t := v
	text := v.art.Profile
	for _, bad := range []string{"(allow default", "file-mount", "(debug", "(with no-sandbox", "(import"} {
		if strings.Contains(text, bad) {
			t.errorf("the profile contains %q", bad)
		}
	}
	if !strings.HasPrefix(text, "(version 1)\n") || !strings.Contains(text, "(deny default") {
		t.errorf("the profile must start with (version 1) and deny by default")
	}
	nodes, err := sbpl.Parse(text)
	if err != nil {
		t.errorf("parse: %v", err)
		return
	}
	for _, s := range sbpl.Literals(nodes) {
		if len(s.Val) >= 900 {
			t.errorf("a literal of %d bytes: %.40q", len(s.Val), s.Val)
		}
	}
	// The fixed base names system paths; nothing else may.
	// (string-append (param "RUN_DIR") "/tmp") appends a name, not a path.
	generated := strings.Replace(text, strings.TrimSpace(baseSBPL), "", 1)
	generated = strings.NewReplacer(`"/`+homeDir+`"))`, "", `"/`+tmpDir+`"))`, "").Replace(generated)
	for k, val := range v.art.Params {
		if len(val) >= 900 || len(k) >= 900 {
			t.errorf("parameter %s is %d bytes", k, len(val))
		}
		if strings.Contains(generated, `"`+val+`"`) {
			t.errorf("the host path %q (%s) is inlined in the profile", val, k)
		}
	}
	lastAllow, firstDeny := -1, len(v.prof.Rules)
	for _, r := range v.prof.Rules {
		if r.Allow {
			lastAllow = r.Index
		} else if r.Index < firstDeny {
			firstDeny = r.Index
		}
		for _, op := range r.Ops {
			if op == "network-outbound" && strings.Contains(r.Text, "(local ") {
				t.errorf("an outbound rule filtered on the local address admits every destination: %s", r.Text)
			}
		}
		if r.Allow && strings.Contains(r.Text, "SecurityServer") {
			t.errorf("SecurityServer allowed: %s", r.Text)
		}
	}
	if lastAllow > firstDeny {
		t.errorf("an allow (rule %d) comes after a deny (rule %d): denies must come last", lastAllow, firstDeny)
	}
	if i := indexOf(v.art.Argv, "--"); v.art.Argv[0] != SandboxExec || v.art.Argv[1] != "-f" || i < 0 || strings.Join(v.art.Argv[i+1:], " ") != "python3 repro.py" {
		t.errorf("argv %q: want %s -f PROFILE -D... -- the command", v.art.Argv, SandboxExec)
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// credentials: every unreadable and masked path, under both spellings,
// itself and below it, for every file operation; and no rename or create
// of any directory above one.
func (v *prover) credentials() {
	v.t.Helper()
	for _, u := range append(append([]string(nil), v.p.Unreadable...), v.p.Masked...) {
		for _, spelling := range []string{v.canon(u)} {
			for _, target := range []string{spelling, spelling + "/id_rsa"} {
				for _, op := range fileOps {
					v.expect(sbpl.Request{Op: op, Path: target}, false, "credential "+u)
				}
				v.expect(sbpl.Request{Op: "network-outbound", RemoteUnix: target}, false, "socket "+u)
			}
			for d := filepath.Dir(spelling); d != "/"; d = filepath.Dir(d) {
				for _, op := range []string{"file-write-unlink", "file-write-create"} {
					v.expect(sbpl.Request{Op: op, Path: d}, false, "the directory above "+u+" (move bypass)")
				}
			}
		}
	}
}

// writable: the writable paths and the scratch take writes; the workspace
// root, the checkout and the host do not; no hard link anywhere.
func (v *prover) writable() {
	v.t.Helper()
	for _, w := range v.p.Writable() {
		c := v.canon(w)
		target := c + "/new.txt"
		if strings.HasSuffix(w, ".md") {
			target = c
		}
		for _, op := range []string{"file-write-data", "file-write-create", "file-write-unlink", "file-read-data"} {
			v.expect(sbpl.Request{Op: op, Path: target}, true, "writable "+w)
		}
		v.expect(sbpl.Request{Op: "file-link", Path: target}, false, "hard link in "+w)
	}
	for _, d := range []string{v.art.Scratch.Home, v.art.Scratch.Tmp} {
		for _, op := range []string{"file-write-data", "file-write-create", "file-write-unlink", "file-read-data", "file-map-executable"} {
			v.expect(sbpl.Request{Op: op, Path: d + "/.cache/x"}, true, "scratch "+d)
		}
	}
	root := v.canon(v.p.WorkspaceRoot)
	for _, p := range []string{root + "/evil.txt", root + "/triage.toml", root} {
		v.expect(sbpl.Request{Op: "file-write-create", Path: p}, false, "the workspace root")
		v.expect(sbpl.Request{Op: "file-write-data", Path: p}, false, "the workspace root")
	}
	for _, m := range v.p.Mounts {
		if m.ReadOnly && m.Kind == "dir" {
			v.expect(sbpl.Request{Op: "file-write-create", Path: v.canon(m.Path) + "/evil.txt"}, false, "read-only mount "+m.Path)
		}
	}
	v.expect(sbpl.Request{Op: "file-write-create", Path: filepath.Dir(v.art.Scratch.Home) + "/profile-9.sb"}, false, "the run directory itself")
	for _, p := range []string{"/usr/local/bin/git", "/private/tmp/x", "/Library/LaunchAgents/x.plist", "/private/etc/hosts"} {
		v.expect(sbpl.Request{Op: "file-write-create", Path: p}, false, "the host")
	}
}

// readable: the allow-list, and nothing beside it.
func (v *prover) readable() {
	v.t.Helper()
	for _, m := range v.p.Mounts {
		target := v.canon(m.Path)
		if m.Kind == "dir" {
			target += "/x.py"
		}
		v.expect(sbpl.Request{Op: "file-read-data", Path: target}, true, "mount "+m.Path)
	}
	for _, r := range v.p.Base.HostRoots {
		v.expect(sbpl.Request{Op: "file-read-data", Path: v.canon(r) + "/x"}, true, "host root "+r)
	}
	for _, p := range []string{"/Users/other/notes.txt", "/private/var/root/x", "/Volumes/backup/x", "/private/tmp/other-run/x"} {
		v.expect(sbpl.Request{Op: "file-read-data", Path: p}, false, "outside the allow-list")
	}
	v.expect(sbpl.Request{Op: "file-read-data", Path: filepath.Dir(v.art.Scratch.Home) + "/owner.json"}, false, "the run directory itself")
	tty := "CHARACTER-DEVICE"
	v.expect(sbpl.Request{Op: "file-read-data", Path: "/dev/tty", Vnode: tty}, false, "the caller's terminal")
	v.expect(sbpl.Request{Op: "file-ioctl", Path: "/dev/ttys003", Vnode: tty}, false, "the caller's terminal")
	v.expect(sbpl.Request{Op: "file-write-data", Path: "/dev/ttys003", Vnode: tty}, false, "the caller's terminal")
	v.expect(sbpl.Request{Op: "file-ioctl", Path: "/dev/ttys009", Vnode: tty, Extensions: []string{"com.apple.sandbox.pty"}}, true, "a pty made inside")
	v.expect(sbpl.Request{Op: "file-write-data", Path: "/dev/null"}, true, "/dev/null")
}

// network: nothing but this host, none of its listeners, no runtime socket;
// with an allow-list, nothing but the run's proxy port.
func (v *prover) network() {
	v.t.Helper()
	outbound := v.p.Network.Mode == policy.NetworkOutbound
	proxy, open := v.p.Network.Mode == policy.NetworkProxy, 0
	if proxy {
		open = v.p.Network.HostProxy.Port
		for _, ip := range []string{"127.0.0.1", "::1"} {
			v.expect(v.out("tcp", ip, open), true, "the run's egress proxy")
		}
		for _, port := range []int{open - 1, open + 1, 3128, 8000} {
			if port == open {
				continue
			}
			v.expect(v.out("tcp", "127.0.0.1", port), false, fmt.Sprintf("another port of this host (%d; the allow-list's proxy port alone)", port))
		}
	}
	for _, a := range []struct {
		proto, ip string
		port      int
	}{
		{"tcp", "1.1.1.1", 443}, {"udp", "1.1.1.1", 53}, {"udp", "8.8.8.8", 53}, {"tcp", "2606:4700:4700::1111", 443},
		{"tcp", "169.254.169.254", 80}, {"tcp", "10.0.0.5", 22}, {"tcp", "::ffff:1.1.1.1", 443}, {"tcp", "::ffff:127.0.0.1", 8000},
	} {
		v.expect(v.out(a.proto, a.ip, a.port), outbound, "outbound to "+a.ip)
	}
	for _, port := range append([]int{53}, v.in.HostPorts...) {
		if port == open {
			continue
		}
		for _, ip := range []string{"127.0.0.1", "::1", hostAddr.String()} {
			v.expect(v.out("tcp", ip, port), false, fmt.Sprintf("the host's listener on %d", port))
			v.expect(v.out("udp", ip, port), false, fmt.Sprintf("the host's listener on %d", port))
		}
	}
	v.expect(v.out("tcp", "127.0.0.1", 41234), !proxy, "the sandbox's own server (not with an allow-list: the proxy's port alone)")
	v.expect(sbpl.Request{Op: "network-bind", Local: &sbpl.Addr{Proto: "tcp", IP: netip.MustParseAddr("127.0.0.1"), Port: 41234}}, true, "bind 127.0.0.1")
	v.expect(sbpl.Request{Op: "network-inbound", Local: &sbpl.Addr{Proto: "tcp", IP: netip.MustParseAddr("127.0.0.1"), Port: 41234}}, true, "accept on 127.0.0.1")
	for _, s := range []string{"/private/var/run/docker.sock", "/private/var/run/mDNSResponder", v.canon(v.p.WorkspaceRoot) + "/s.sock"} {
		v.expect(sbpl.Request{Op: "network-outbound", RemoteUnix: s}, outbound && strings.HasSuffix(s, "mDNSResponder"), "unix socket "+s)
	}
	v.expect(sbpl.Request{Op: "network-outbound", RemoteUnix: v.art.Scratch.Tmp + "/app.sock"}, true, "a socket in TMPDIR")
	v.expect(sbpl.Request{Op: "network-bind", LocalUnix: v.art.Scratch.Tmp + "/app.sock"}, true, "a socket in TMPDIR")
}

// services: the minimal allowlist, the doors denied.
func (v *prover) services() {
	v.t.Helper()
	doors := map[string]string{"com.apple.SecurityServer": "keychain", "com.apple.securityd.xpc": "keychain",
		"com.apple.trustd.agent": "trustd", "com.apple.trustd": "trustd",
		"com.apple.coreservices.launchservicesd": "launchservices", "com.apple.lsd.mapdb": "launchservices",
		"com.apple.coreservices.appleevents": "appleevents", "com.apple.pasteboard.1": "pasteboard",
		"com.apple.windowserver.active": "", "com.docker.vmnetd": "", "com.apple.sysmond": ""}
	for n, family := range doors {
		v.expect(sbpl.Request{Op: "mach-lookup", Name: n}, family != "" && slices.Contains(v.in.OptIns, family), "service "+n)
	}
	for _, n := range []string{"com.apple.system.opendirectoryd.libinfo", "com.apple.bsd.dirhelper"} {
		v.expect(sbpl.Request{Op: "mach-lookup", Name: n}, true, "service "+n)
	}
	chromium := sbpl.Request{Op: "mach-register", Name: "org.chromium.Chromium.MachPortRendezvousServer.42"}
	v.expect(chromium, v.p.Role == profiles.RoleReproducer, "Chromium's rendezvous (reproducers only)")
	v.expect(sbpl.Request{Op: "appleevent-send"}, slices.Contains(v.in.OptIns, "appleevents"), "Apple events")
	v.expect(sbpl.Request{Op: "sysctl-read", Name: "kern.procargs2"}, false, "another process's arguments")
	v.expect(sbpl.Request{Op: "signal", Target: "other"}, false, "signalling a host process")
}

// TestPropertiesHandPolicies proves both roles on Mac-shaped policies with a
// symlinked /tmp, /var and a symlinked credential directory.
func TestPropertiesHandPolicies(t *testing.T) {
	home := "/Users/me"
	canon := macFS(map[string]string{home + "/.ssh": "/Volumes/keys/ssh", home + "/.aws": "../../private/tmp/aws-creds"},
		home+"/work", "/Volumes/keys/ssh", "/private/tmp/aws-creds", "/private/tmp/checkout", "/private/var/folders/xy/T")
	cases := []struct {
		name, root, checkout string
		mode                 policy.NetworkMode
		optIns               []string
	}{
		{"plain", home + "/work/triage", home + "/src/project", policy.NetworkLoopback, nil},
		{"odd names", home + "/Work Space/[triage] \"q\" ünïcødé (1)", "/tmp/checkout/a b", policy.NetworkLoopback, nil},
		{"network on", home + "/work/triage", "/tmp/checkout", policy.NetworkOutbound, nil},
		{"allow-list", home + "/work/triage", home + "/src/project", policy.NetworkProxy, nil},
	}
	for _, tc := range cases {
		for _, role := range profiles.Roles() {
			t.Run(tc.name+"/"+string(role), func(t *testing.T) {
				p := handPolicy(role, home, tc.root, tc.checkout, tc.mode)
				// The workspace's own socket and a credential under the checkout are masked.
				p.Masked = []string{tc.root + "/s.sock", tc.checkout + "/.git/fsmonitor--daemon.ipc"}
				in := Input{Canon: canon, RunID: "r1", RunDir: "/var/folders/xy/T/triage-sandbox-seatbelt-501/run-1",
					Self: "/opt/homebrew/bin/triage-sandbox", HostPorts: []int{5432, 6379, 8080}, OptIns: tc.optIns}
				if tc.mode == policy.NetworkProxy {
					// As a run has it: the proxy's port is among the host's listeners.
					p.Network.HostProxy = &policy.HostProxy{Port: testProxyPort, Secret: "never-rendered-5ec7e7"}
					in.HostPorts = append(in.HostPorts, testProxyPort)
				}
				newProver(t, p, in).check()
			})
		}
	}
}

// TestPropertiesBuiltPolicies proves both roles on policies policy.Build
// makes from a triage.toml, in directories with spaces, brackets, quotes
// and unicode, with the workspace inside the caller's home and as the home.
func TestPropertiesBuiltPolicies(t *testing.T) {
	for _, layout := range []string{"workspace in home", "workspace is home"} {
		for _, role := range profiles.Roles() {
			t.Run(layout+"/"+string(role), func(t *testing.T) {
				base := filepath.Join(t.TempDir(), `odd [dir] "q" ünï (1)`)
				home := filepath.Join(base, "home dir")
				root := filepath.Join(home, "work space")
				if layout == "workspace is home" {
					root = home
				}
				checkout := filepath.Join(base, "check out [x]")
				for _, d := range []string{root, checkout + "/.git", home + "/.ssh", home + "/.config/gh"} {
					mustMkdir(t, d)
				}
				mustWrite(t, home+"/.ssh/id_ed25519", "canary")
				mustWrite(t, home+"/.config/gh/hosts.yml", "canary")
				mustWrite(t, checkout+"/README.md", "readme")
				toml := "[project]\ncheckout = " + quoteTOML(checkout) + "\n\n[sandbox]\naccept_weaker = " + acceptTOML() + "\n"
				cfgPath := filepath.Join(root, "triage.toml")
				mustWrite(t, cfgPath, toml)
				for _, w := range profiles.Writable(role) {
					if strings.HasSuffix(w, ".md") {
						mustWrite(t, filepath.Join(root, w), "")
					} else {
						mustMkdir(t, filepath.Join(root, w))
					}
				}
				cfg, err := config.Load(cfgPath)
				if err != nil {
					t.Fatal(err)
				}
				host := policy.Host{Home: home, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=ghp_canary"},
					OS: runtime.GOOS, UID: 501, GID: 20, Cwd: root}
				p, err := policy.Build(cfg, role, host, policy.Options{Backend: Name, Capabilities: Capabilities()})
				if err != nil {
					t.Fatalf("policy.Build: %v", err)
				}
				if len(p.Masked) == 0 && layout == "workspace is home" {
					t.Fatalf("the home as workspace must mask its credentials")
				}
				in := Input{Canon: HostResolver(), RunID: "r2", RunDir: filepath.Join(base, "state", "run-2"), Self: "/usr/local/bin/triage-sandbox",
					HostPorts: []int{5432}}
				newProver(t, p, in).check()
			})
		}
	}
}

// acceptTOML is exactly what a default policy needs and seatbelt lacks.
func acceptTOML() string {
	return `["own_loopback", "pid_namespace", "memory_limit", "pids_limit", "cpu_limit", "bounded_writes"]`
}

func quoteTOML(s string) string { return "'" + s + "'" }

func mustMkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, body string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPropertiesCanFail mutates a rendered profile the way the renderers
// in the research went wrong, and checks the properties catch each one: a
// check that cannot fail proves nothing.
func TestPropertiesCanFail(t *testing.T) {
	home := "/Users/me"
	canon := macFS(nil, home+"/work")
	p := handPolicy(profiles.RoleAgent, home, home+"/work/triage", home+"/src/project", policy.NetworkLoopback)
	in := Input{Canon: canon, RunID: "r1", RunDir: "/var/folders/xy/T/ts/run-1", HostPorts: []int{5432}}
	mutations := []struct {
		name   string
		mutate func(text string) string
		want   string
	}{
		{"an allow after the denies (deny-before-allow)", func(s string) string {
			return s + "(allow file-read* file-write* (subpath (param \"DENY_0\")))\n"
		}, "credential"},
		{"(local ip) on outbound", func(s string) string {
			return s + "(allow network-outbound (local ip \"localhost:*\"))\n"
		}, "outbound to 1.1.1.1"},
		{"no move-blocking", func(s string) string {
			return s + "(allow file-write-unlink file-write-create (subpath \"/Users\"))\n"
		}, "move bypass"},
		{"(allow default)", func(s string) string {
			return strings.Replace(s, "(deny default", "(allow default", 1)
		}, "(allow default"},
		{"SecurityServer", func(s string) string {
			return s + "(allow mach-lookup (global-name \"com.apple.SecurityServer\"))\n"
		}, "SecurityServer"},
		{"the host's listeners open", func(s string) string {
			return strings.Replace(s, "(remote ip \"localhost:5432\")", "(remote ip \"localhost:5433\")", 1)
		}, "listener on 5432"},
		{"a writable path lost", func(s string) string {
			return strings.Replace(s, "(allow file-write*\n", "(allow file-write-xattr\n", 1)
		}, "writable"},
		{"an inlined path", func(s string) string {
			return s + "(allow file-read* (literal \"/Users/me/src/project\"))\n"
		}, "inlined"},
		{"the caller's terminal", func(s string) string {
			return strings.Replace(s, "(extension \"com.apple.sandbox.pty\")", "(vnode-type CHARACTER-DEVICE)", 1)
		}, "terminal"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			v := newProver(t, p, in)
			v.art.Profile = m.mutate(v.art.Profile)
			prof, err := sbpl.Compile(v.art.Profile, v.art.Params)
			if err != nil {
				t.Fatalf("the mutated profile does not compile: %v", err)
			}
			v.prof = prof
			errs := v.all()
			if !strings.Contains(strings.Join(errs, "\n"), m.want) {
				t.Errorf("no property mentioning %q failed; got %d failures:\n%s", m.want, len(errs), strings.Join(errs, "\n"))
			}
		})
	}
}

func sbplLookup(name string) sbpl.Request { return sbpl.Request{Op: "mach-lookup", Name: name} }

// testProxyPort is the run's proxy port in the allow-list tests.
const testProxyPort = 49152

// allowListCase is a reproducer with a network allow-list, as a run
// renders it: the proxy on testProxyPort, listening among the host's ports.
func allowListCase() (*policy.Policy, Input) {
	home := "/Users/me"
	p := handPolicy(profiles.RoleReproducer, home, home+"/work/triage", home+"/src/project", policy.NetworkProxy)
	p.Network.Key = "[sandbox.reproducer] network"
	p.Network.HostProxy = &policy.HostProxy{Port: testProxyPort, Secret: "never-rendered-5ec7e7"}
	in := Input{Canon: macFS(nil, home+"/work"), RunID: "r1", RunDir: "/var/folders/xy/T/ts/run-1", HostPorts: []int{5432, testProxyPort}}
	return p, in
}

// TestPropertiesCanFailAllowList: the allow-list's properties catch each
// way its network could be widened, and the proxy closed.
func TestPropertiesCanFailAllowList(t *testing.T) {
	p, in := allowListCase()
	port := fmt.Sprint(testProxyPort)
	mutations := []struct {
		name   string
		mutate func(text string) string
		want   string
	}{
		{"the proxy's port widened to every port", func(s string) string {
			return strings.Replace(s, `(remote ip "localhost:`+port+`")`, `(remote ip "localhost:*")`, 1)
		}, "another port of this host"},
		{"the proxy's port lost", func(s string) string {
			return strings.Replace(s, `(remote ip "localhost:`+port+`")`, `(remote ip "localhost:1")`, 1)
		}, "the run's egress proxy"},
		{"the proxy's port among the denied listeners", func(s string) string {
			return strings.Replace(s, `(remote ip "localhost:5432")`, `(remote ip "localhost:5432")`+"\n  "+`(remote ip "localhost:`+port+`")`, 1)
		}, "the run's egress proxy"},
		{"a remote address", func(s string) string {
			return strings.Replace(s, `(remote ip "localhost:`+port+`")`, `(remote ip "localhost:`+port+`") (remote tcp "*:443")`, 1)
		}, "outbound to 1.1.1.1"},
		{"DNS", func(s string) string {
			return s + "(allow network-outbound (remote unix-socket (subpath \"/private/var/run/mDNSResponder\")))\n"
		}, "mDNSResponder"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			v := newProver(t, p, in)
			mutated := m.mutate(v.art.Profile)
			if mutated == v.art.Profile {
				t.Fatal("the mutation changed nothing: the profile no longer has what it replaces")
			}
			prof, err := sbpl.Compile(mutated, v.art.Params)
			if err != nil {
				t.Fatalf("the mutated profile does not compile: %v", err)
			}
			v.prof = prof
			errs := v.all()
			if !strings.Contains(strings.Join(errs, "\n"), m.want) {
				t.Errorf("no property mentioning %q failed; got %d failures:\n%s", m.want, len(errs), strings.Join(errs, "\n"))
			}
		})
	}
}

// TestAllowListNeedsTheRunsProxy: without the run's proxy the renderer
// refuses an allow-list (a start fails closed); `render` shows the
// placeholder port; the secret is never in the rendering.
func TestAllowListNeedsTheRunsProxy(t *testing.T) {
	p, in := allowListCase()
	art, err := Render(p, backends.Command{Argv: []string{"true"}}, in)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := art.JSON()
	if strings.Contains(string(j), p.Network.HostProxy.Secret) {
		t.Error("the rendering shows the proxy's secret")
	}
	none := *p
	none.Network.HostProxy = nil
	if _, err := Render(&none, backends.Command{Argv: []string{"true"}}, in); err == nil || !strings.Contains(err.Error(), "[sandbox.reproducer] network") {
		t.Errorf("Render without the run's proxy = %v, want a refusal naming the key", err)
	}
	b, err := NewWithOptions(backends.Env{SelfExe: "/usr/local/bin/triage-sandbox"}, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b.canon = in.Canon
	got, err := b.Render(&none, backends.Command{Argv: []string{"true"}})
	if err != nil {
		t.Fatalf("render of an allow-list: %v", err)
	}
	if prof := got.(*Artifact).Profile; !strings.Contains(prof, fmt.Sprintf(`(remote ip "localhost:%d")`, RenderProxyPort)) {
		t.Errorf("render does not show the placeholder port %d:\n%s", RenderProxyPort, prof)
	}
	if none.Network.HostProxy != nil {
		t.Error("render changed the caller's policy")
	}
}

// TestPropertiesBuiltAllowList: a reproducer's allow-list from a
// triage.toml is enforced for seatbelt (egress_proxy, own_loopback
// accepted) and its rendering holds.
func TestPropertiesBuiltAllowList(t *testing.T) {
	base := t.TempDir()
	home, root := filepath.Join(base, "home"), filepath.Join(base, "home", "ws")
	mustMkdir(t, filepath.Join(root, "repros"))
	cfgPath := filepath.Join(root, "triage.toml")
	mustWrite(t, cfgPath, "[sandbox]\naccept_weaker = "+acceptTOML()+"\n[sandbox.reproducer]\nnetwork = [\"python\", \"files.example.org\"]\n")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	host := policy.Host{Home: home, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + home}, OS: runtime.GOOS, UID: 501, GID: 20, Cwd: root}
	p, err := policy.Build(cfg, profiles.RoleReproducer, host, policy.Options{Backend: Name, Capabilities: Capabilities()})
	if err != nil {
		t.Fatalf("policy.Build: %v", err)
	}
	if _, err := policy.Enforce(p, Name, Capabilities()); err != nil {
		t.Fatalf("Enforce: %v", err)
	}
	p.Network.HostProxy = &policy.HostProxy{Port: testProxyPort, Secret: "x"}
	in := Input{Canon: HostResolver(), RunID: "r3", RunDir: filepath.Join(base, "state", "run-3"), HostPorts: []int{testProxyPort}}
	newProver(t, p, in).check()
}
