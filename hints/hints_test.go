package hints

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

func testPolicy() *policy.Policy {
	return &policy.Policy{
		Role: "reproducer", WorkspaceRoot: "/ws",
		Mounts: []policy.Mount{
			{Path: "/ws", ReadOnly: true, Why: "workspace root"},
			{Path: "/ws/repros", ReadOnly: false, Why: "writable (repros)"},
			{Path: "/src/widgets", ReadOnly: true, Why: "project checkout"},
			{Path: "/opt/venv", ReadOnly: true, Why: "python environment"},
		},
		Unreadable: []string{"/home/u/.ssh"},
		Network:    policy.Network{Mode: policy.NetworkLoopback},
	}
}

var host = Host{
	LookPath: func(name string) (string, error) {
		switch name {
		case "less":
			return "/usr/bin/less", nil
		case "mytool":
			return "/root/bin/mytool", nil
		}
		return "", errors.New("not found")
	},
	Lstat: fakeHost{
		"/": dir(0, 0o755), "/opt": dir(0, 0o755), "/opt/data": dir(0, 0o755), "/opt/data/x.csv": file(0, 0o644),
		"/home": dir(0, 0o755), "/home/u": dir(1000, 0o755), "/home/u/.ssh": dir(1000, 0o700), "/home/u/.ssh/id_rsa": file(1000, 0o600),
		"/usr": dir(0, 0o755), "/usr/local": dir(0, 0o755), "/usr/local/go": dir(0, 0o755), "/usr/local/go/bin": dir(0, 0o755),
		"/usr/local/go/bin/go": file(0, 0o755), "/usr/bin": dir(0, 0o755), "/usr/bin/less": file(0, 0o755),
		"/root": dir(0, 0o700), "/root/bin": dir(0, 0o755), "/root/bin/mytool": file(0, 0o755),
		"/run": dir(0, 0o755), "/run/dbus": dir(0, 0o755), "/run/dbus/system_bus_socket": {Mode: os.ModeSocket | 0o666},
	}.lstat,
}

// fakeHost is a host's file tree for Host.Lstat: path to entry.
type fakeHost map[string]Entry

func (f fakeHost) lstat(p string) (Entry, bool) {
	e, ok := f[p]
	return e, ok
}

func dir(uid int, perm os.FileMode) Entry  { return Entry{UID: uid, GID: uid, Mode: os.ModeDir | perm} }
func file(uid int, perm os.FileMode) Entry { return Entry{UID: uid, GID: uid, Mode: perm} }

// TestFrom: real error texts of shells, Python, Node, Go, Java and
// Chromium, each with the hint it gets (substrings, one per hint).
func TestFrom(t *testing.T) {
	const (
		wsWritable   = `add "out" to [sandbox] writable`
		checkoutRO   = "the project checkout /src/widgets is read-only ([sandbox] checkout_writes = \"refuse\")"
		notVisible   = "exists on the host but is not visible in the sandbox: mount it read-only with [sandbox] read_only"
		networkFalse = "network = false"
		localName    = "the name localhost did not resolve in the sandbox: that is not the network"
	)
	tests := []struct {
		name, output string
		exit         int
		want         []string // nil = no hint
	}{
		{"plain assertion failure", "FAILED test_x.py::test_y - AssertionError: 1 != 2", 1, nil},
		{"success says nothing", "sh: 1: less: not found", 0, nil},

		// EROFS, in each language's words.
		{"python: write to the workspace", "OSError: [Errno 30] Read-only file system: '/ws/out/report.txt'", 1, []string{wsWritable}},
		{"node: nyc into the checkout",
			"Error: EROFS: read-only file system, open '/src/widgets/.nyc_output/4b1e.json'\n    at Object.openSync (node:fs:596:3)", 1,
			[]string{checkoutRO}},
		{"node: mkdir in the workspace", "Error: EROFS: read-only file system, mkdir '/ws/out'", 1, []string{wsWritable}},
		{"go: build cache in the workspace", "go: creating work dir: mkdir /ws/out/go-build123: read-only file system", 1, []string{wsWritable}},
		{"go: test writes into the checkout", "--- FAIL: TestWrite\n    x_test.go:12: open /src/widgets/testdata/golden.out: read-only file system", 1,
			[]string{checkoutRO}},
		{"java nio", "java.nio.file.FileSystemException: /src/widgets/target/classes: Read-only file system", 1, []string{checkoutRO}},
		{"java io", "java.io.FileNotFoundException: /ws/out/a.txt (Read-only file system)", 1, []string{wsWritable}},
		{"java without a path", "Exception in thread \"main\" java.nio.file.ReadOnlyFileSystemException\n\tat jdk.nio.zipfs", 1,
			[]string{"[sandbox] writable"}},
		{"coreutils: write to the checkout", "touch: cannot touch '/src/widgets/.cache': Read-only file system", 1, []string{checkoutRO}},
		{"a read-only mount that is not the workspace", "OSError: [Errno 30] Read-only file system: '/opt/venv/lib/x.pyc'", 1,
			[]string{"/opt/venv is mounted read-only (python environment)"}},
		{"the image's root", "npm ERR! Error: EROFS: read-only file system, mkdir '/usr/lib/node_modules/x'", 1,
			[]string{"the sandbox's file system is read-only"}},
		{"write to an output is not the sandbox's doing", "OSError: [Errno 30] Read-only file system: '/ws/repros/x'", 1, nil},

		// EACCES: Landlock and Seatbelt refuse writes with it.
		{"python: EACCES in the workspace", "PermissionError: [Errno 13] Permission denied: '/ws/out/x'", 1, []string{wsWritable}},
		{"node: EACCES in the checkout", "Error: EACCES: permission denied, open '/src/widgets/coverage/lcov.info'", 1, []string{checkoutRO}},
		{"go: EACCES in the workspace", "open /ws/out/x: permission denied", 1, []string{wsWritable}},
		{"java: EACCES", "java.nio.file.AccessDeniedException: /src/widgets/build", 1, []string{checkoutRO}},
		{"host path not mounted", "PermissionError: [Errno 13] Permission denied: '/opt/data/x.csv'", 1, []string{"/opt/data/x.csv " + notVisible}},
		{"credential path: no hint to mount it", "cat: /home/u/.ssh/id_rsa: Permission denied", 1, nil},

		// ENOENT on a host path that is not mounted.
		{"python: ENOENT", "FileNotFoundError: [Errno 2] No such file or directory: '/opt/data/x.csv'", 1, []string{"/opt/data/x.csv " + notVisible}},
		{"coreutils: ENOENT", "cat: /opt/data/x.csv: No such file or directory", 1, []string{"/opt/data/x.csv " + notVisible}},
		{"node: ENOENT", "Error: ENOENT: no such file or directory, open '/opt/data/x.csv'", 1, []string{"/opt/data/x.csv " + notVisible}},
		{"go: ENOENT", "fork/exec /usr/local/go/bin/go: no such file or directory", 1, []string{"/usr/local/go/bin/go " + notVisible}},
		{"java: ENOENT", "java.io.FileNotFoundException: /opt/data/x.csv (No such file or directory)", 1, []string{"/opt/data/x.csv " + notVisible}},
		{"ENOENT under a mount is the program's", "cat: /ws/missing.txt: No such file or directory", 1, nil},
		{"ENOENT of what the host lacks too", "cat: /nowhere/x: No such file or directory", 1, nil},
		{"ENOENT of a credential path", "cat: /home/u/.ssh/id_rsa: No such file or directory", 1, nil},

		// Network.
		{"python: name resolution", "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>", 1, []string{networkFalse}},
		{"npm: EAI_AGAIN", "npm ERR! code EAI_AGAIN\nnpm ERR! errno EAI_AGAIN", 1, []string{networkFalse}},
		{"npm: network", "npm ERR! network request to https://registry.npmjs.org/x failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org", 1, []string{networkFalse}},
		{"curl", "curl: (6) Could not resolve host: example.com", 6, []string{networkFalse}},
		{"go: proxy", `go: example.com/m@v1.0.0: Get "https://proxy.golang.org/x": dial tcp: lookup proxy.golang.org: Temporary failure in name resolution`, 1, []string{networkFalse}},

		// Dependency fetches: the hint names the recipe, not only the network.
		{"go: proxy names the recipe", `go: example.com/m@v1.0.0: Get "https://proxy.golang.org/example.com/m/@v/v1.0.0.mod": dial tcp: lookup proxy.golang.org on 127.0.0.11:53: dial udp 127.0.0.11:53: connect: network is unreachable`, 1,
			[]string{"`go mod download` in the checkout on the host so every one is there (README, section \"Dependencies\")"}},
		{"go: GOPROXY=off", "go: example.com/m@v1.0.0: module lookup disabled by GOPROXY=off", 1, []string{"`go mod download` in the checkout on the host so every one is there (README, section \"Dependencies\")"}},
		{"go: newer toolchain", "go: go.mod requires go >= 1.99 (running go 1.26.8; GOTOOLCHAIN=local)", 1, []string{"newer go than the sandbox's"}},
		{"npm: registry ENOTFOUND", "npm error code ENOTFOUND\nnpm error network request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org", 1,
			[]string{"network = false); install the dependencies on the host (`npm ci` in the checkout)"}},
		{"npm: registry EAI_AGAIN", "npm ERR! request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org", 1, []string{"`npm ci` in the checkout"}},
		{"pip: no index", "WARNING: Retrying (Retry(total=4...)) after connection broken by 'NewConnectionError(...: Failed to establish a new connection: [Errno 101] Network is unreachable')': /simple/requests/\nERROR: Could not find a version that satisfies the requirement requests (from versions: none)\nERROR: No matching distribution found for requests", 1,
			[]string{"name its interpreter in [project] python"}},

		// The name localhost failing is the sandbox's /etc/hosts, never the
		// network (issue 34 #5: vitest under oci).
		{"node: vitest on localhost", "Error: getaddrinfo EAI_AGAIN localhost\n    at GetAddrInfoReqWrap.onlookup [as oncomplete] (node:dns:120:26) {\n" +
			"  errno: -3001,\n  code: 'EAI_AGAIN',\n  syscall: 'getaddrinfo',\n  hostname: 'localhost'\n}", 1, []string{localName}},
		{"node: a .localhost name", "Error: getaddrinfo ENOTFOUND api.localhost", 1, []string{localName}},
		{"go: localhost", "dial tcp: lookup localhost on 127.0.0.1:53: read udp 127.0.0.1:40000->127.0.0.1:53: read: connection refused", 1, []string{localName}},
		{"curl: localhost", "curl: (6) Could not resolve host: localhost", 6, []string{localName}},
		{"python requests: localhost", `requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=5173): Max retries exceeded with url: / ` +
			`(Caused by NameResolutionError("<urllib3.connection.HTTPConnection object at 0x7f>: Failed to resolve 'localhost' ([Errno -3] Temporary failure in name resolution)"))`,
			1, []string{localName}},
		{"python urllib3 1.x: localhost", "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=8000): Max retries exceeded with url: / " +
			"(Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution'))",
			1, []string{localName}},
		{"aiohttp: localhost", "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host localhost:8080 ssl:default [Temporary failure in name resolution]", 1, []string{localName}},
		{"python: a registry, not localhost", "HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded with url: /simple/x/ (Caused by NewConnectionError('x: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution'))",
			1, []string{networkFalse}},
		{"java: localhost", "java.net.UnknownHostException: localhost: Temporary failure in name resolution", 1, []string{localName}},
		{"localhost and the registry", "Error: getaddrinfo EAI_AGAIN localhost\nnpm ERR! network request to https://registry.npmjs.org/x failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org",
			1, []string{localName, networkFalse}},

		// Missing tools and Chromium.
		{"tool missing in the image", "sh: 1: less: not found", 1, []string{"less is missing in the sandbox but the host has it (/usr/bin/less)"}},
		{"python's form", "FileNotFoundError: [Errno 2] No such file or directory: 'less'", 1, []string{"less is missing"}},
		{"a tool nobody has", "bash: frobnicate: command not found", 127, nil},
		{"chromium", "[0101/000000.000000:FATAL:zygote_host_impl_linux.cc(127)] No usable sandbox! Update your kernel or see https://chromium.googlesource.com/...", 1,
			[]string{"pass --no-sandbox"}},
		// Chromium's D-Bus lines (as it printed them in the sandbox) are
		// noise, never a path to mount: the host's system bus socket must
		// not be suggested for read_only.
		{"chromium's D-Bus noise", "[25:57:1206/011816.264254:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket /run/dbus/system_bus_socket: No such file or directory\n" +
			"[25:57:1206/011816.276378:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Could not parse server address: Unknown address type (examples of valid types are \"tcp\" and on UNIX \"unix\")\n" +
			"[25:25:1206/011820.054954:ERROR:dbus/object_proxy.cc:572] Failed to call method: org.freedesktop.DBus.NameHasOwner: object_path= /org/freedesktop/DBus: unknown error type: \n" +
			"AssertionError: expected 'hi'", 1,
			[]string{"the \"Failed to connect to the bus\" lines are Chromium looking for D-Bus, which the sandbox has none of: harmless, not why the command failed; --log-level=3 quiets them"}},
		{"chromium via playwright", "browserType.launch: Target page, context or browser has been closed\n[pid=12][err] Failed to move to new namespace: PID namespaces supported, Network namespace supported, but failed: errno = Operation not permitted", 1,
			[]string{"pass --no-sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := From(testPolicy(), Run{Output: tt.output, ExitCode: tt.exit}, host)
			checkHints(t, got, tt.want)
		})
	}
}

// TestFromRuns: what the caller says about the run (timed out, argv, a
// writable checkout) changes the hint.
func TestFromRuns(t *testing.T) {
	writableCheckout := testPolicy()
	writableCheckout.Mounts[2].ReadOnly = false
	discardWanted := testPolicy()
	discardWanted.Mounts[2].Discard = true
	networkOn := testPolicy()
	networkOn.Network.Mode = policy.NetworkOutbound
	allowList := testPolicy()
	allowList.Network = policy.Network{Mode: policy.NetworkProxy, Key: "[sandbox.reproducer] network"}
	tests := []struct {
		name string
		p    *policy.Policy
		run  Run
		want []string
	}{
		{"npm view hangs silently", testPolicy(), Run{ExitCode: 124, TimedOut: true, Argv: []string{"npm", "view", "minimist"}},
			[]string{"timed out, probably waiting for the network (npm view reaches it)"}},
		{"in a shell, after flags", testPolicy(), Run{ExitCode: 124, TimedOut: true, Argv: []string{"sh", "-c", "cd x && npm --silent view minimist version"}},
			[]string{"npm view reaches it"}},
		{"python -m pip download", testPolicy(), Run{ExitCode: 124, TimedOut: true, Argv: []string{"python3", "-m", "pip", "download", "flask"}},
			[]string{"pip download reaches it"}},
		{"go get", testPolicy(), Run{ExitCode: 124, TimedOut: true, Argv: []string{"/usr/local/go/bin/go", "get", "example.com/m"}},
			[]string{"go get reaches it"}},
		{"curl", testPolicy(), Run{ExitCode: 124, TimedOut: true, Argv: []string{"curl", "-sS", "http://example.com"}},
			[]string{"curl reaches it"}},
		{"timed out with network words", testPolicy(), Run{ExitCode: 124, TimedOut: true, Argv: []string{"node", "fetch.js"},
			Output: "Error: connect ETIMEDOUT 93.184.216.34:443"}, []string{"timed out while it was trying to reach the network"}},
		{"npm test timing out is not the network", testPolicy(), Run{ExitCode: 124, TimedOut: true, Argv: []string{"npm", "test"}}, nil},
		{"go test timing out is not the network", testPolicy(), Run{ExitCode: 124, TimedOut: true, Argv: []string{"go", "test", "./..."}}, nil},
		{"a failure that did not time out", testPolicy(), Run{ExitCode: 1, Argv: []string{"npm", "view", "x"}}, nil},
		{"a tool around the allow-list's proxy", allowList, Run{ExitCode: 1, Output: "ssh: Could not resolve hostname github.com: Temporary failure in name resolution"},
			[]string{"with an allow-list ([sandbox.reproducer] network) the only way out is the proxy"}},
		{"the allow-list's proxy refused: no bypass hint", allowList, Run{ExitCode: 1, Output: "HTTP Error 403: Forbidden"}, nil},
		{"the network was on", networkOn, Run{ExitCode: 124, TimedOut: true, Argv: []string{"npm", "view", "x"}}, nil},
		{"a writable checkout's refused write", writableCheckout, Run{ExitCode: 1, CheckoutDiscarded: true,
			Output: "Error: EACCES: permission denied, open '/src/widgets/package-lock.json'"},
			[]string{"the checkout's writes are discarded at the end of the run"}},
		{"a discarded checkout the backend could not make", discardWanted, Run{ExitCode: 1,
			Output: "Error: EROFS: read-only file system, mkdir '/src/widgets/dist'"},
			[]string{`stayed read-only in this sandbox, because the backend could not make the overlay that [sandbox] checkout_writes = "discard"`}},
		{"a writable checkout: no key to name", writableCheckout, Run{ExitCode: 1, CheckoutDiscarded: true,
			Output: "Error: EROFS: read-only file system, open '/ws/out/x'"}, []string{`add "out" to [sandbox] writable`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkHints(t, From(tt.p, tt.run, host), tt.want)
		})
	}
}

// TestFromNeutralisesWhatTheSandboxWrote: a path in the output carries an
// escape sequence and a newline; the hint shows them, not obeys them.
func TestFromNeutralisesWhatTheSandboxWrote(t *testing.T) {
	out := "OSError: [Errno 30] Read-only file system: '/ws/\x1b]0;pwned\x07x\n::error::forged/y'"
	got := From(testPolicy(), Run{Output: out, ExitCode: 1}, host)
	if len(got) == 0 {
		t.Fatal("no hint")
	}
	for _, h := range got {
		if strings.ContainsAny(h, "\x1b\x07\n") {
			t.Errorf("hint %q holds a raw control character", h)
		}
	}
}

func checkHints(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("hints %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("hint %q lacks %q", got[i], w)
		}
	}
}

// TestOwnerRefused: a write the file's own permissions refuse in a
// writable checkout names the sandbox's uid, the owner and what fixes it.
func TestOwnerRefused(t *testing.T) {
	p := testPolicy()
	p.Mounts[2].Discard = true
	p.User = policy.Identity{UID: 1000, GID: 1000}
	// The checkout's root is the sandbox's; dist is o's.
	owned := func(o Owner) Host {
		h := host
		h.Lstat = fakeHost{
			"/src/widgets":      dir(1000, 0o755),
			"/src/widgets/dist": {UID: o.UID, GID: o.GID, Mode: os.ModeDir | o.Mode},
		}.lstat
		return h
	}
	out := "Error: EACCES: permission denied, mkdir '/src/widgets/dist/esm'"
	tests := []struct {
		name string
		h    Host
		want string
	}{
		{"another user's", owned(Owner{Path: "/src/widgets/dist", UID: 1001, GID: 1002, Mode: 0o755}),
			`the sandbox runs as uid 1000 and its directory /src/widgets/dist belongs to uid 1001 (mode -rwxr-xr-x): run the sandbox as that owner with [sandbox] user = "1001:1002"`},
		{"root's", owned(Owner{Path: "/src/widgets/dist", UID: 0, GID: 0, Mode: 0o755}),
			`belongs to root (mode -rwxr-xr-x), and the sandbox never runs as root: give the checkout to a user on the host (chown -R), or set [sandbox] checkout_writes = "refuse"`},
		{"its own, by mode", owned(Owner{Path: "/src/widgets/dist", UID: 1000, GID: 1000, Mode: 0o555}),
			"the sandbox runs as uid 1000, which owns its directory /src/widgets/dist, but its mode -r-xr-xr-x refuses the write"},
		{"unknown", Host{Lstat: fakeHost{}.lstat},
			"the file's own permissions refuse the sandbox's user (uid 1000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkHints(t, From(p, Run{ExitCode: 1, CheckoutDiscarded: true, Output: out}, tt.h), []string{tt.want})
		})
	}
}

// TestCoreutilsQuotes: coreutils in a UTF-8 locale quotes paths with ‘ ’;
// the hint names the path without them.
func TestCoreutilsQuotes(t *testing.T) {
	p := testPolicy()
	p.User = policy.Identity{UID: 1000, GID: 1000}
	h := host
	h.Lstat = fakeHost{"/src/widgets": dir(1000, 0o755), "/src/widgets/ro": dir(1000, 0o555)}.lstat
	got := From(p, Run{ExitCode: 1, CheckoutDiscarded: true, Output: "mkdir: cannot create directory ‘/src/widgets/ro/x’: Permission denied"}, h)
	checkHints(t, got, []string{"a write to /src/widgets/ro/x was refused although"})
}

// TestNoStatOracle: a path a failing command prints is said to exist on
// the host only when the sandbox's identity could have seen it there; a
// path it could not see gets what a missing path gets (no hint), so the
// hint, worked out as the orchestrator (root in CI), is no oracle.
func TestNoStatOracle(t *testing.T) {
	p := testPolicy()
	p.User = policy.Identity{UID: 1000, GID: 1000}
	h := Host{Lstat: fakeHost{
		"/": dir(0, 0o755), "/root": dir(0, 0o700), "/root/.bashrc": file(0, 0o644),
		"/var": dir(0, 0o755), "/var/lib": dir(0, 0o755), "/var/lib/docker": dir(0, 0o710),
		"/var/lib/docker/volumes": dir(0, 0o755),
		"/opt":                    dir(0, 0o755), "/opt/data": dir(0, 0o755), "/opt/data/x.csv": file(0, 0o644),
		"/opt/data/other.key": file(1001, 0o600), "/opt/data/team.csv": {UID: 1001, GID: 1000, Mode: 0o640},
		"/opt/link": {Mode: os.ModeSymlink | 0o777},
		"/srv":      dir(1000, 0o311), "/srv/blind": file(0, 0o644),
	}.lstat}
	const seen = "exists on the host"
	tests := []struct {
		name, path string
		want       bool
	}{
		{"readable by anyone", "/opt/data/x.csv", true},
		{"readable through its group", "/opt/data/team.csv", true},
		{"another user's private file", "/opt/data/other.key", false},
		{"inside root's home", "/root/.bashrc", false},
		{"a directory it may not search", "/var/lib/docker/volumes", false},
		{"through a host symlink", "/opt/link/.bashrc", false},
		{"an unreadable store", "/home/u/.ssh/id_rsa", false},
		{"missing", "/opt/data/nope.csv", false},
		{"searchable, not listable, readable", "/srv/blind", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := "cat: " + tt.path + ": No such file or directory"
			got := strings.Join(From(p, Run{ExitCode: 1, Output: out}, h), "\n")
			if strings.Contains(got, seen) != tt.want {
				t.Errorf("hint %q: says %q = %v, want %v", got, seen, !tt.want, tt.want)
			}
		})
	}
}

// TestOwnerNotThroughHostLinks: a refused write under a symlink the
// checkout holds names no owner: the link's target on the host is not what
// the sandbox saw.
func TestOwnerNotThroughHostLinks(t *testing.T) {
	p := testPolicy()
	p.Mounts[2].Discard = true
	p.User = policy.Identity{UID: 1000, GID: 1000}
	h := Host{Lstat: fakeHost{
		"/src/widgets": dir(1000, 0o755), "/src/widgets/link": {Mode: os.ModeSymlink | 0o777},
		"/src/widgets/link/x": file(0, 0o600),
	}.lstat}
	got := From(p, Run{ExitCode: 1, CheckoutDiscarded: true, Output: "Error: EACCES: permission denied, open '/src/widgets/link/x'"}, h)
	checkHints(t, got, []string{"the file's own permissions refuse the sandbox's user (uid 1000)"})
}

// TestMissingToolNoOracle: a tool the host has only where the sandbox's
// identity could not look (root's own PATH entry) is not named.
func TestMissingToolNoOracle(t *testing.T) {
	p := testPolicy()
	p.User = policy.Identity{UID: 1000, GID: 1000}
	if got := From(p, Run{ExitCode: 127, Output: "sh: 1: mytool: not found"}, host); len(got) != 0 {
		t.Errorf("hints %q, want none", got)
	}
	checkHints(t, From(p, Run{ExitCode: 127, Output: "sh: 1: less: not found"}, host), []string{"less is missing in the sandbox but the host has it (/usr/bin/less)"})
}
