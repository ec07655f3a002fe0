package sbpl

import (
	"net/netip"
	"strings"
	"testing"
)

func mustCompile(t *testing.T, src string, params map[string]string) *Profile {
	t.Helper()
	p, err := Compile(src, params)
	if err != nil {
		t.Fatalf("Compile: %v\n%s", err, src)
	}
	return p
}

func decide(t *testing.T, p *Profile, r Request, o Options) bool {
	t.Helper()
	d, err := p.Decide(r, o)
	if err != nil {
		t.Fatalf("Decide(%+v): %v", r, err)
	}
	return d.Allow
}

func TestParseStrings(t *testing.T) {
	tests := []struct {
		src  string
		want string
		raw  bool
	}{
		{`"plain"`, "plain", false},
		{`"a \"quoted\" \\ path"`, `a "quoted" \ path`, false},
		{`#"^/dev/ttys[0-9]+\.x$"`, `^/dev/ttys[0-9]+\.x$`, true},
		{`"tab\tnl\n"`, "tab\tnl\n", false},
		{`"ünïcödé [x] (y)"`, "ünïcödé [x] (y)", false},
		{"; a comment\n\"after\"", "after", false},
	}
	for _, tc := range tests {
		nodes, err := Parse(tc.src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.src, err)
		}
		s, ok := nodes[0].(*Str)
		if !ok || s.Val != tc.want || s.Raw != tc.raw {
			t.Errorf("Parse(%q) = %#v, want %q raw=%v", tc.src, nodes[0], tc.want, tc.raw)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`(allow`, "unclosed"},
		{`)`, "unexpected )"},
		{`"abc`, "unterminated string"},
		{`#"abc`, "unterminated"},
		{`"\x41"`, "unsupported escape"},
		{`'sym`, "quoted symbols"},
		{`"` + strings.Repeat("a", MaxLiteral+1) + `"`, "Error reading string"},
	}
	for _, tc := range tests {
		if _, err := Parse(tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%.20q) error = %v, want it to mention %q", tc.src, err, tc.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`(deny default)`, "must start with (version 1)"},
		{"(version 1)\n(version 1)", "must come first and once"},
		{"(version 1)\n(allow file-reed*)", `unknown operation "file-reed*"`},
		{"(version 1)\n(allow file-read* (subpat \"/x\"))", `unknown filter "subpat"`},
		{"(version 1)\n(allow file-read* (subpath (param \"NOPE\")))", `parameter "NOPE" is not given`},
		{"(version 1)\n(allow file-read* (subpath \"relative\"))", "absolute path"},
		{"(version 1)\n(allow network-outbound (remote ip \"1.2.3.4:80\"))", "host must be * or localhost"},
		{"(version 1)\n(allow network-outbound (remote ip \"localhost:99999\"))", "port must be"},
		{"(version 1)\n(import \"system.sb\")", `unsupported top-level form "import"`},
		{"(version 1)\n(allow default (literal \"/\"))", "default takes no other"},
		{"(version 1)\n(allow file-read* (with frobnicate))", "unsupported modifier"},
		{"(version 1)\n(allow file-read* (regex #\"[\"))", "bad regex"},
		{"(version 1)\n(allow file-read* (require-not))", "takes one filter"},
	}
	for _, tc := range tests {
		if _, err := Compile(tc.src, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compile(%q) error = %v, want it to mention %q", tc.src, err, tc.want)
		}
	}
}

func TestExpressions(t *testing.T) {
	src := `(version 1)
(deny default)
(allow file-read* (subpath (string-append (param "RUN") "/home")))
(allow file-write* (regex (string-append "^" (regex-quote (param "ROOT")) "/out(/.*)?$")))`
	p := mustCompile(t, src, map[string]string{"RUN": "/private/tmp/r 1", "ROOT": "/w/a[b].c+d"})
	tests := []struct {
		op, path string
		want     bool
	}{
		{"file-read-data", "/private/tmp/r 1/home/x", true},
		{"file-read-data", "/private/tmp/r 1/homes", false},
		{"file-write-data", "/w/a[b].c+d/out/f", true},
		{"file-write-data", "/w/ab.c+d/out/f", false},   // brackets quoted, not a class
		{"file-write-data", "/w/a[b]xc+d/out/f", false}, // dot quoted
		{"file-write-data", "/w/a[b].c+d/outside", false},
	}
	for _, tc := range tests {
		if got := decide(t, p, Request{Op: tc.op, Path: tc.path}, Options{}); got != tc.want {
			t.Errorf("%s %s = %v, want %v", tc.op, tc.path, got, tc.want)
		}
	}
}

func TestPathFilters(t *testing.T) {
	src := `(version 1)
(deny default)
(allow file-read* (literal "/lit") (subpath "/sub") (prefix "/pre") (regex #"^/dev/ttys[0-9]+$"))
(allow file-write* (require-all (subpath "/w") (require-not (subpath "/w/ro")) (require-any (vnode-type REGULAR-FILE) (vnode-type DIRECTORY))))
(allow file-read* (subpath "/"))`
	p := mustCompile(t, src, nil)
	tests := []struct {
		r    Request
		want bool
	}{
		{Request{Op: "file-read-data", Path: "/lit"}, true},
		{Request{Op: "file-write-data", Path: "/lit"}, false},
		{Request{Op: "file-read-data", Path: "/sub"}, true},
		{Request{Op: "file-read-data", Path: "/sub/a/b"}, true},
		{Request{Op: "file-read-data", Path: "/anything"}, true}, // (subpath "/")
		{Request{Op: "file-write-data", Path: "/w/x", Vnode: "REGULAR-FILE"}, true},
		{Request{Op: "file-write-data", Path: "/w/x", Vnode: "CHARACTER-DEVICE"}, false},
		{Request{Op: "file-write-data", Path: "/w/x"}, false}, // type unknown
		{Request{Op: "file-write-data", Path: "/w/ro/x", Vnode: "REGULAR-FILE"}, false},
		{Request{Op: "file-write-data", Path: "/wx", Vnode: "REGULAR-FILE"}, false},
	}
	for _, tc := range tests {
		if got := decide(t, p, tc.r, Options{}); got != tc.want {
			t.Errorf("%+v = %v, want %v", tc.r, got, tc.want)
		}
	}
	q := mustCompile(t, "(version 1)\n(deny default)\n(allow file-read* (subpath \"/sub\") (prefix \"/pre\") (regex #\"^/dev/ttys[0-9]+$\"))", nil)
	for path, want := range map[string]bool{"/subx": false, "/prefix/y": true, "/prex": true, "/dev/ttys001": true, "/dev/ttysa": false} {
		if got := decide(t, q, Request{Op: "file-read-data", Path: path}, Options{}); got != want {
			t.Errorf("read %s = %v, want %v", path, got, want)
		}
	}
}

// TestPrecedence pins the rules of section 2.6 of the research.
func TestPrecedence(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		r        Request
		specific bool // the answer with SpecificOpWins
		last     bool // the answer with LastMatchOnly
		denyWins bool // the answer with DenyWins
	}{
		{"last filtered match wins (deny last)",
			"(allow file-read* (subpath \"/h\"))\n(deny file-read* (subpath \"/h/.ssh\"))",
			Request{Op: "file-read-data", Path: "/h/.ssh/id"}, false, false, false},
		{"last filtered match wins (allow last)",
			"(deny file-read* (subpath \"/h/.ssh\"))\n(allow file-read* (subpath \"/h\"))",
			Request{Op: "file-read-data", Path: "/h/.ssh/id"}, true, true, false},
		{"unfiltered allow after a filtered deny does not undo it",
			"(deny network-outbound (remote ip \"*:*\"))\n(allow network-outbound)",
			Request{Op: "network-outbound", Remote: &Addr{"tcp", netip.MustParseAddr("1.1.1.1"), 443}}, false, false, false},
		{"filtered allow after an unfiltered deny wins",
			"(deny file-read*)\n(allow file-read* (literal \"/x\"))",
			Request{Op: "file-read-data", Path: "/x"}, true, true, true},
		{"unfiltered rule beats the default",
			"(allow file-read*)",
			Request{Op: "file-read-data", Path: "/x"}, true, true, true},
		{"specific op is not overridden by a later wildcard",
			"(deny file-write-unlink (literal \"/w/x\"))\n(allow file-write* (subpath \"/w\"))",
			Request{Op: "file-write-unlink", Path: "/w/x"}, false, true, false},
		{"a later specific op wins either way",
			"(allow file-write* (subpath \"/w\"))\n(deny file-write-unlink (literal \"/w/x\"))",
			Request{Op: "file-write-unlink", Path: "/w/x"}, false, false, false},
		{"narrower wildcard beats broader one",
			"(deny file-read* (subpath \"/w\"))\n(allow file* (subpath \"/w\"))",
			Request{Op: "file-read-data", Path: "/w/a"}, false, true, false},
		{"other operations are untouched",
			"(allow file-write* (subpath \"/w\"))",
			Request{Op: "file-read-data", Path: "/w/a"}, false, false, false},
	}
	for _, tc := range tests {
		p := mustCompile(t, "(version 1)\n(deny default)\n"+tc.src, nil)
		if got := decide(t, p, tc.r, Options{}); got != tc.specific {
			t.Errorf("%s: specific-op semantics = %v, want %v", tc.name, got, tc.specific)
		}
		if got := decide(t, p, tc.r, Options{LastMatchOnly: true}); got != tc.last {
			t.Errorf("%s: last-match semantics = %v, want %v", tc.name, got, tc.last)
		}
		if got := decide(t, p, tc.r, Options{DenyWins: true}); got != tc.denyWins {
			t.Errorf("%s: deny-wins semantics = %v, want %v", tc.name, got, tc.denyWins)
		}
	}
}

func TestDefault(t *testing.T) {
	for src, want := range map[string]bool{
		"(version 1)\n(deny default)":                        false,
		"(version 1)\n(allow default)":                       true,
		"(version 1)":                                        false,
		"(version 1)\n(deny default (with message \"t:1\"))": false,
	} {
		p := mustCompile(t, src, nil)
		if got := decide(t, p, Request{Op: "mach-lookup", Name: "x"}, Options{}); got != want {
			t.Errorf("%q: %v, want %v", src, got, want)
		}
	}
}

func TestNetwork(t *testing.T) {
	host := netip.MustParseAddr("192.168.1.20")
	o := Options{HostAddrs: []netip.Addr{host}}
	out := func(proto, ip string, port int) Request {
		return Request{Op: "network-outbound", Remote: &Addr{proto, netip.MustParseAddr(ip), port}}
	}
	loopbackOnly := mustCompile(t, `(version 1)
(deny default)
(allow network-outbound (remote ip "localhost:*"))
(deny network-outbound (remote ip "localhost:5432") (remote tcp "localhost:53"))`, nil)
	tests := []struct {
		r    Request
		want bool
	}{
		{out("tcp", "127.0.0.1", 8000), true},
		{out("tcp", "::1", 8000), true},
		{out("tcp", "127.0.0.1", 5432), false},
		{out("udp", "127.0.0.1", 5432), false},
		{out("tcp", "127.0.0.1", 53), false},
		{out("udp", "127.0.0.1", 53), true},      // (remote tcp) leaves udp alone
		{out("tcp", "192.168.1.20", 8000), true}, // localhost means every host address
		{out("tcp", "192.168.1.21", 8000), false},
		{out("tcp", "1.1.1.1", 443), false},
		{out("tcp", "::ffff:127.0.0.1", 8000), false}, // the IPv4-mapped form is not localhost
	}
	for _, tc := range tests {
		if got := decide(t, loopbackOnly, tc.r, o); got != tc.want {
			t.Errorf("outbound %v = %v, want %v", tc.r.Remote, got, tc.want)
		}
	}
	// A (local ip ...) filter on outbound admits every destination.
	bug := mustCompile(t, "(version 1)\n(deny default)\n(allow network-outbound (local ip \"localhost:*\"))", nil)
	if !decide(t, bug, out("tcp", "1.1.1.1", 443), o) {
		t.Error("(local ip \"localhost:*\") on network-outbound must admit 1.1.1.1 (the egress bug)")
	}
	bind := mustCompile(t, "(version 1)\n(deny default)\n(allow network-bind network-inbound (local ip \"localhost:*\"))", nil)
	for ip, want := range map[string]bool{"127.0.0.1": true, "0.0.0.0": true, "::": true, "192.168.1.20": true, "::ffff:127.0.0.1": false} {
		r := Request{Op: "network-bind", Local: &Addr{"tcp", netip.MustParseAddr(ip), 8000}}
		if got := decide(t, bind, r, o); got != want {
			t.Errorf("bind %s = %v, want %v", ip, got, want)
		}
	}
}

func TestUnixSocketsAndNames(t *testing.T) {
	p := mustCompile(t, `(version 1)
(deny default)
(allow system-socket (socket-domain AF_UNIX))
(allow network-outbound (remote unix-socket (subpath "/run/x")))
(allow network-bind (local unix-socket (path-literal "/run/x/s")))
(deny network-outbound (remote unix-socket (subpath "/run/x/deny")))
(allow mach-lookup (global-name "com.apple.a") (global-name-prefix "org.chromium.") (local-name "com.apple.cfprefsd.agent"))
(deny mach-lookup (global-name-regex #"^org\.chromium\.bad"))
(allow sysctl-read (sysctl-name "hw.ncpu") (sysctl-name-prefix "kern.proc.pid."))
(allow signal (target same-sandbox))`, nil)
	tests := []struct {
		r    Request
		want bool
	}{
		{Request{Op: "system-socket", SocketDomain: "AF_UNIX"}, true},
		{Request{Op: "system-socket", SocketDomain: "AF_SYSTEM"}, false},
		{Request{Op: "network-outbound", RemoteUnix: "/run/x/s"}, true},
		{Request{Op: "network-outbound", RemoteUnix: "/run/x/deny/s"}, false},
		{Request{Op: "network-outbound", RemoteUnix: "/var/run/docker.sock"}, false},
		{Request{Op: "network-bind", LocalUnix: "/run/x/s"}, true},
		{Request{Op: "network-bind", LocalUnix: "/run/x/t"}, false},
		{Request{Op: "mach-lookup", Name: "com.apple.a"}, true},
		{Request{Op: "mach-lookup", Name: "com.apple.ab"}, false},
		{Request{Op: "mach-lookup", Name: "org.chromium.Chromium.MachPortRendezvousServer.1"}, true},
		{Request{Op: "mach-lookup", Name: "org.chromium.bad"}, false},
		{Request{Op: "mach-lookup", Name: "com.apple.cfprefsd.agent"}, false},
		{Request{Op: "mach-lookup", Name: "com.apple.cfprefsd.agent", LocalName: true}, true},
		{Request{Op: "mach-lookup", Name: "com.apple.SecurityServer"}, false},
		{Request{Op: "sysctl-read", Name: "kern.proc.pid.12"}, true},
		{Request{Op: "sysctl-read", Name: "kern.procargs2"}, false},
		{Request{Op: "signal", Target: "self"}, true},
		{Request{Op: "signal", Target: "other"}, false},
	}
	for _, tc := range tests {
		if got := decide(t, p, tc.r, Options{}); got != tc.want {
			t.Errorf("%+v = %v, want %v", tc.r, got, tc.want)
		}
	}
}

func TestDecideRefusesWildcardRequests(t *testing.T) {
	p := mustCompile(t, "(version 1)\n(deny default)", nil)
	for _, op := range []string{"file-read*", "frobnicate", "default"} {
		if _, err := p.Decide(Request{Op: op}, Options{}); err == nil {
			t.Errorf("Decide(%q) accepted a non-concrete operation", op)
		}
	}
}

func TestModifiersAndExplanation(t *testing.T) {
	p := mustCompile(t, "(version 1)\n(deny default (with message \"tsbx:r1\"))\n(deny file-read* (subpath \"/s\") (with message \"tsbx:r1\"))", nil)
	d, err := p.Decide(Request{Op: "file-read-data", Path: "/s/k"}, Options{})
	if err != nil || d.Allow || d.Rule == nil || d.Rule.Modifiers[0] != "message tsbx:r1" {
		t.Fatalf("decision %+v, %v", d, err)
	}
	if !strings.Contains(d.String(), "deny by rule 0") {
		t.Errorf("explanation %q", d.String())
	}
}
