// Package hints tells the user when a failed command's output points at a
// sandbox restriction rather than at the code under test: a write refused
// on a read-only path, an unreachable network, a tool the image lacks but
// the host has, a host path the sandbox cannot see, a browser whose own
// sandbox cannot start inside ours. It only reads what the output pipeline
// showed (already redacted) and what the caller says about the run; no
// hint when nothing points to the sandbox.
package hints

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Host is what hints may ask about the host.
type Host struct {
	// LookPath finds a command on the host (exec.LookPath by default).
	LookPath func(string) (string, error)
	// Lstat is the owner and mode (type bits included) of one host path,
	// its last component not followed (os.Lstat by default); ok false
	// when it cannot be read.
	Lstat func(string) (entry Entry, ok bool)
}

// Entry is what an lstat of one host path shows.
type Entry struct {
	UID, GID int
	Mode     os.FileMode
}

// Owner is who owns a host path, and its mode.
type Owner struct {
	Path     string
	UID, GID int
	Mode     os.FileMode
}

func (h Host) lstat(path string) (Entry, bool) {
	if h.Lstat != nil {
		return h.Lstat(path)
	}
	return hostLstat(path)
}

func (h Host) lookPath(name string) (string, error) {
	if h.LookPath != nil {
		return h.LookPath(name)
	}
	return exec.LookPath(name)
}

// Run is what hints read about one finished command.
type Run struct {
	// Output is what the output pipeline showed (both streams).
	Output   string
	ExitCode int
	// TimedOut: the command was killed at its timeout.
	TimedOut bool
	// Argv is the command as run (a network tool that timed out with the
	// network off is hinted at even when it printed nothing).
	Argv []string
	// CheckoutDiscarded: the checkout is writable inside the sandbox and
	// its writes are discarded at the end of the run (or session): the
	// backend made its overlay, not only the policy asked for one. A
	// refused write there is then not the checkout's mount.
	CheckoutDiscarded bool
}

// errno is the kind of failure a path was named with.
type errno int

const (
	eROFS errno = iota
	eACCES
	eNOENT
)

// pathRes find the path a failed file operation names, in the wording of
// the shells and coreutils, Python, Node, Go and Java.
// patterns are compiled on first use: only a failed run reads them, and
// every start of the binary would pay for them at package init.
var patterns = sync.OnceValue(func() hintPatterns {
	return hintPatterns{pathRes: map[errno][]*regexp.Regexp{
		eROFS: {
			regexp.MustCompile(`Read-only file system: '([^']+)'`),                                                    // Python
			regexp.MustCompile(`EROFS: read-only file system, \w+ '([^']+)'`),                                         // Node
			regexp.MustCompile(`(?i)(/[^\s:'"()‘’]+)’?: read-only file system`),                                       // Go, Java nio, coreutils
			regexp.MustCompile(`(/[^\s:'"()‘’]+) \(Read-only file system\)`),                                          // java.io
			regexp.MustCompile(`cannot (?:create|touch|remove|open|make)[^\n]*'(/[^']+)'[^\n]*Read-only file system`), // coreutils
		},
		eACCES: {
			regexp.MustCompile(`Permission denied: '(/[^']+)'`),                                                   // Python
			regexp.MustCompile(`EACCES: permission denied, \w+ '(/[^']+)'`),                                       // Node
			regexp.MustCompile(`(?i)(/[^\s:'"()‘’]+)’?: permission denied`),                                       // Go, coreutils
			regexp.MustCompile(`(/[^\s:'"()‘’]+) \(Permission denied\)`),                                          // java.io
			regexp.MustCompile(`java\.nio\.file\.AccessDeniedException: (/[^\s:'"()‘’]+)`),                        // Java nio
			regexp.MustCompile(`cannot (?:create|touch|remove|open|make)[^\n]*'(/[^']+)'[^\n]*Permission denied`), // coreutils
		},
		eNOENT: {
			regexp.MustCompile(`No such file or directory: '(/[^']+)'`),                             // Python
			regexp.MustCompile(`ENOENT: no such file or directory, \w+ '(/[^']+)'`),                 // Node
			regexp.MustCompile(`(?i)(/[^\s:'"()‘’]+)’?: no such file or directory`),                 // Go, coreutils
			regexp.MustCompile(`(/[^\s:'"()‘’]+) \(No such file or directory\)`),                    // java.io
			regexp.MustCompile(`java\.nio\.file\.NoSuchFileException: (/[^\s:'"()‘’]+)`),            // Java nio
			regexp.MustCompile(`cannot (?:access|open|stat) '(/[^']+)': No such file or directory`), // coreutils
		},
	},
		// readOnlyAnyRe: a refused write that names no path (Java's
		// ReadOnlyFileSystemException, Rust's "(os error 30)").
		readOnlyAnyRe: regexp.MustCompile(`(?i)ReadOnlyFileSystemException|read-only file system|EROFS`),
		// networkRe: error codes match as written ("FileNotFoundError" is
		// no ENOTFOUND), phrases in any case.
		// failedNameRes find the name a failed lookup names, in the
		// wording of Node, Go, curl, Python's urllib3 and Java.
		failedNameRes: []*regexp.Regexp{
			regexp.MustCompile(`getaddrinfo (?:EAI_AGAIN|ENOTFOUND|EAI_NONAME|EAI_FAIL) ([^\s'",)]+)`), // Node
			regexp.MustCompile(`hostname: '([^']+)'`),                                                  // Node's error object
			regexp.MustCompile(`\blookup ([^\s:]+)(?: on \S+)?: `),                                     // Go
			regexp.MustCompile(`Could not resolve host: ([^\s'",)]+)`),                                 // curl
			regexp.MustCompile(`Failed to resolve '([^']+)'`),                                          // urllib3
			regexp.MustCompile(`host='([^']+)'[^\n]*(?:name resolution|Name or service not known)`),    // urllib3 1.x
			regexp.MustCompile(`Cannot connect to host ([^\s:]+)[^\n]*(?:name resolution|not known)`),  // aiohttp
			regexp.MustCompile(`UnknownHostException: ([^\s:]+)`),                                      // Java
		},
		networkRe: regexp.MustCompile(`\b(?:EAI_AGAIN|ENETUNREACH|ENOTFOUND|ETIMEDOUT)\b|(?i:network is unreachable|temporary failure in name resolution|name or service not known|could not resolve host|getaddrinfo|failed to establish a new connection|npm ERR! network|npm error network|dial tcp: lookup|connection timed out|Max retries exceeded with url)`),
		missingRe: []*regexp.Regexp{
			regexp.MustCompile(`(?m)(?:^|\s)(?:sh|bash|dash|zsh)?:?\s*(?:\d+:\s*)?([A-Za-z0-9._+-]+): (?:command )?not found`),
			regexp.MustCompile(`No such file or directory: '([A-Za-z0-9._+-]+)'`),
			regexp.MustCompile(`triage-sandbox: ([A-Za-z0-9._+-]+): command not found in the sandbox`),
		},
		// chromiumRe is Chromium refusing to start without its own sandbox
		// (user namespaces or a setuid helper, which ours withholds).
		chromiumRe: regexp.MustCompile(`No usable sandbox!|Failed to move to new namespace|zygote_host_impl_linux\.cc.*sandbox`),
		// dbusLineRe is a line of Chromium's D-Bus client failing: the
		// sandbox has no bus (and must not: the host's system bus is a
		// way out), and no environment variable quiets it
		// (DBUS_SESSION_BUS_ADDRESS=disabled:, DBUS_SYSTEM_BUS_ADDRESS or
		// unix:path=/dev/null only change its wording: measured).
		dbusLineRe: regexp.MustCompile(`(?m)^.*(?:dbus/(?:bus|object_proxy)\.cc|Failed to connect to the bus: ).*$`),
	}
})

type hintPatterns struct {
	// pathRes find the path a failed file operation names, in the wording
	// of the shells and coreutils, Python, Node, Go and Java.
	pathRes                              map[errno][]*regexp.Regexp
	readOnlyAnyRe, networkRe, chromiumRe *regexp.Regexp
	dbusLineRe                           *regexp.Regexp
	missingRe, failedNameRes             []*regexp.Regexp
}

const (
	proxyBypassHint = "the output shows a network failure: with an allow-list (%s) the only way out is the proxy at http://127.0.0.1:3128, which HTTP_PROXY and HTTPS_PROXY name; a tool that resolved a name or connected itself did not use it (ssh, raw sockets and DNS cannot pass: use an https URL, or a tool that reads those variables)"
	networkHint     = "the output shows a network failure: the sandbox reaches only its own loopback ([sandbox] network = false); a reproducer that needs the network cannot run here"
	chromiumHint    = "Chromium's own sandbox cannot start inside this one (it needs user namespaces or a setuid helper, which the sandbox withholds): pass --no-sandbox (Playwright: chromiumSandbox: false; Puppeteer: args: ['--no-sandbox']). That is safe here, as ai-triager does it: the browser stays confined by this sandbox (no network beyond loopback, no credentials, read-only files)"
	dbusHint        = "the \"Failed to connect to the bus\" lines are Chromium looking for D-Bus, which the sandbox has none of: harmless, not why the command failed; --log-level=3 quiets them (Playwright and Puppeteer: args: ['--log-level=3'])"
	localhostHint   = "the name localhost did not resolve in the sandbox: that is not the network (the sandbox keeps its own loopback, and localhost needs no DNS) " +
		"but a /etc/hosts that does not name it (the image's, or the host's on the local backend); `triage-sandbox selftest` checks it (C-11); 127.0.0.1 works meanwhile"
	readOnlyHint = "the output shows a write refused on a read-only file system: only the writable paths ([sandbox] writable, relative to the workspace root) and the scratch ($HOME, $TMPDIR) can be written in the sandbox"
)

// From returns the hints for run under p; none for a run that succeeded.
func From(p *policy.Policy, run Run, h Host) []string {
	if run.ExitCode == 0 || p == nil || p.AllowAll {
		return nil
	}
	dbus := patterns().dbusLineRe.MatchString(run.Output)
	if dbus {
		// Its lines name the host's bus socket: never a path to mount.
		run.Output = patterns().dbusLineRe.ReplaceAllString(run.Output, "")
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if named := pathHints(p, run, h, add); !named[eROFS] && patterns().readOnlyAnyRe.MatchString(run.Output) {
		add(readOnlyHint)
	}
	networkHints(p, run, add)
	missingHints(p, run, h, add)
	if patterns().chromiumRe.MatchString(run.Output) {
		add(chromiumHint)
	}
	if dbus {
		add(dbusHint)
	}
	sort.Strings(out)
	return out
}

// networkHints: a failed lookup of localhost is /etc/hosts', not the
// network's; other failures are the loopback-only network's, or with an
// allow-list a tool that went around the proxy (the sandbox has no DNS
// and no route).
func networkHints(p *policy.Policy, run Run, add func(string)) {
	local, other := failedLookups(run.Output)
	if local {
		add(localhostHint)
	}
	// The network hint only when something else failed too (or nothing
	// named says what).
	if p.Network.LoopbackOnly() && (!local || other) {
		add(networkHintFor(run))
	}
	if p.Network.Mode == policy.NetworkProxy && (other || patterns().networkRe.MatchString(run.Output)) {
		add(fmt.Sprintf(proxyBypassHint, p.Network.Key))
	}
}

// missingHints names the programs the output says are missing that the
// host has, only where the sandbox's identity could see the host's copy
// (PATH may hold root's own directories): no oracle either.
func missingHints(p *policy.Policy, run Run, h Host, add func(string)) {
	for _, re := range patterns().missingRe {
		for _, m := range re.FindAllStringSubmatch(run.Output, 8) {
			if where, err := h.lookPath(m[1]); err == nil && h.seenBy(p.User, where) {
				add(fmt.Sprintf("%s is missing in the sandbox but the host has it (%s): add it to the image (images/Dockerfile, or [sandbox] image)", output.Line(m[1]), where))
			}
		}
	}
}

// pathHints hints at each path a refused or failed file operation names;
// it returns the kinds of failure that named one.
func pathHints(p *policy.Policy, run Run, h Host, add func(string)) map[errno]bool {
	named := map[errno]bool{}
	for _, kind := range []errno{eROFS, eACCES, eNOENT} {
		for _, re := range patterns().pathRes[kind] {
			for _, m := range re.FindAllStringSubmatch(run.Output, 8) {
				named[kind] = true
				add(pathHint(p, run, h, kind, filepath.Clean(m[1])))
			}
		}
	}
	return named
}

// pathHint: a write refused under a read-only mount names the key that
// makes it writable; a path under no mount that the host has is not
// mounted.
func pathHint(p *policy.Policy, run Run, h Host, kind errno, path string) string {
	m := mountOf(p, path)
	switch {
	case m == nil && kind == eROFS:
		return fmt.Sprintf("a write to %s was refused: outside the writable paths and the scratch ($HOME, $TMPDIR) the sandbox's file system is read-only; write there instead", output.Line(path))
	case m == nil:
		return notMounted(p, path, h)
	case kind == eNOENT:
		return ""
	case m.Why == checkoutWhy && run.CheckoutDiscarded:
		return ownerRefused(p, h, path)
	case !m.ReadOnly:
		return ""
	}
	return readOnly(p, m, path)
}

// checkoutWhy is how the policy names the project checkout's mount.
const checkoutWhy = "project checkout"

// mountOf is the innermost mount holding path, nil when none does.
func mountOf(p *policy.Policy, path string) *policy.Mount {
	var m *policy.Mount
	for i := range p.Mounts {
		if within(p.Mounts[i].Path, path) && (m == nil || len(p.Mounts[i].Path) > len(m.Path)) {
			m = &p.Mounts[i]
		}
	}
	return m
}

// readOnly names the config key when a refused write fell on a path the
// sandbox mounts read-only (the workspace or the checkout).
func readOnly(p *policy.Policy, m *policy.Mount, path string) string {
	shown := output.Line(path)
	if rel, err := filepath.Rel(p.WorkspaceRoot, path); err == nil && m.Path == p.WorkspaceRoot {
		return fmt.Sprintf("a write to %s was refused: the workspace is read-only except its outputs; to let the %s role write there, add %q to [sandbox] writable", shown, p.Role, output.Line(firstPart(rel)))
	}
	if m.Why == checkoutWhy && m.Discard {
		return fmt.Sprintf("a write to %s was refused: the project checkout %s stayed read-only in this sandbox, because the backend could not make the overlay that [sandbox] checkout_writes = \"discard\" (the default) asks for (the warning says why); until it can, point the tool's output (coverage, cache, build directory) at the scratch ($TMPDIR) or at a path in [sandbox] writable", shown, output.Line(m.Path))
	}
	if m.Why == checkoutWhy {
		return fmt.Sprintf("a write to %s was refused: the project checkout %s is read-only ([sandbox] checkout_writes = \"refuse\"); set checkout_writes = \"discard\" to let commands write there with the writes thrown away, or point the tool's output at the scratch ($TMPDIR) or at a path in [sandbox] writable", shown, output.Line(m.Path))
	}
	return fmt.Sprintf("a write to %s was refused: %s is mounted read-only (%s); write under the outputs ([sandbox] writable) or the scratch ($TMPDIR) instead", shown, output.Line(m.Path), m.Why)
}

// notMounted hints at a host path that exists but is not mounted. The
// orchestrator may be root and the path came from the sandbox's output, so
// the hint says a path exists only when the sandbox's identity could have
// learnt that itself (seenBy); a path it could not see gets the answer a
// missing one gets, none, and the hint is no stat oracle on the host.
func notMounted(p *policy.Policy, path string, h Host) string {
	for _, u := range p.Unreadable {
		if within(u, path) {
			return ""
		}
	}
	if !h.seenBy(p.User, path) {
		return ""
	}
	return fmt.Sprintf("%s exists on the host but is not visible in the sandbox: mount it read-only with [sandbox] read_only if the command needs it", output.Line(path))
}

func firstPart(rel string) string {
	if i := strings.IndexByte(rel, '/'); i > 0 {
		return rel[:i]
	}
	return rel
}

func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// ownerRefused: a write refused in a writable (discarded) checkout by the
// file's own permissions. It names the sandbox's uid, the owner, and what
// lets the sandbox write there.
func ownerRefused(p *policy.Policy, h Host, path string) string {
	shown := output.Line(path)
	const lead = "a write to %s was refused although the checkout is writable in the sandbox (the checkout's writes are discarded at the end of the run): "
	o, ok := h.ownerWithin(p.User, mountOf(p, path).Path, path)
	if !ok {
		return fmt.Sprintf(lead+"the file's own permissions refuse the sandbox's user (uid %d)", shown, p.User.UID)
	}
	what := output.Line(o.Path)
	if o.Path != path {
		what = "its directory " + what
	}
	switch {
	case o.UID == p.User.UID:
		return fmt.Sprintf(lead+"the sandbox runs as uid %d, which owns %s, but its mode %s refuses the write", shown, p.User.UID, what, o.Mode.Perm())
	case o.UID == 0:
		return fmt.Sprintf(lead+"the sandbox runs as uid %d and %s belongs to root (mode %s), and the sandbox never runs as root: give the checkout to a user on the host (chown -R), or set [sandbox] checkout_writes = \"refuse\" if read-only is meant", shown, p.User.UID, what, o.Mode.Perm())
	}
	return fmt.Sprintf(lead+"the sandbox runs as uid %d and %s belongs to uid %d (mode %s): run the sandbox as that owner with [sandbox] user = \"%d:%d\", or give the checkout to one user on the host", shown, p.User.UID, what, o.UID, o.Mode.Perm(), o.UID, o.GID)
}
