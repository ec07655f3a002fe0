package policy

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// What the sandbox may read under a mounted directory is decided here, not
// left to the mount: a mount exposes everything below it, so the policy
// lists what must stay hidden there (Masked) and backends hide each path
// (docker and oci bind /dev/null over a file and an empty read-only tmpfs
// over a directory; a runtime skips a path that does not exist when the
// sandbox starts).
//
//   - Credential stores (profiles.CredentialPaths, or [sandbox] secrets):
//     every one under a mount is masked, whether or not it exists at build
//     time, so one the host creates before the sandbox starts is hidden too.
//     A mount that covers the caller's home (the workspace or the checkout
//     is the home or above it) gets a warning saying so.
//   - Unix sockets: a host daemon's socket inside a mounted directory (git's
//     fsmonitor daemon keeps .git/fsmonitor--daemon.ipc in the checkout) is
//     connectable from inside, network namespace or not, by any uid with
//     write permission on it. A distinct uid protects only against another
//     user's 0600 socket; the sandbox normally runs as the socket's owner
//     (the caller, or the workspace owner when root runs triage-sandbox),
//     so every socket found under a mount is masked, however deep, .git
//     directories included: connect(2) then finds /dev/null, not a socket,
//     and fails with ECONNREFUSED. Abstract sockets need nothing: they
//     belong to the network namespace, and the sandbox has its own. Not
//     masked: a socket created after the sandbox started, and one past the
//     scan's entry budget, which only a mount of a whole home directory or
//     larger reaches; the policy then warns that the scan stopped.
//     System directories (Mount.System: the host's /usr, or a python
//     environment's prefix in it) are not scanned: only root can make a
//     socket in them (systemDir says why), and walking the whole of /usr
//     cost every run more than half a second. A mount's Hidden
//     directories (a venv's unused base site-packages, venv.go) are
//     masked whole and so not walked either.

// The socket scan's budget, per mount: it walks every directory (no depth
// bound: a depth bound is where finding #7's socket lived), reading at most
// this many entries, so a mount of a whole home directory cannot make every
// run walk all of it. A checkout with its node_modules stays well inside.
var socketScanEntries = 1_000_000

func unreadableList(sb config.Sandbox, host Host) []string {
	list := profiles.CredentialPaths()
	if sb.Secrets != nil {
		list = sb.Secrets
	}
	list = append(append([]string(nil), list...), profiles.RuntimeSockets()...)
	// Tool configs in the system directories are no one's choice to share.
	list = append(list, profiles.ToolchainCredentialPaths()...)
	// Our own state (audit log, guard cache and key) wherever it is.
	list = append(list, stateDir(host))
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	// A home reached through a symlink: "~/x" is unreadable under both
	// names even while x does not exist, since mounts are canonical paths.
	res := resolver{rd: host.Reads, m: map[string]resolved{}}
	realHome := ""
	if host.Home != "" {
		if r, err := res.eval(host.Home); err == nil && r != filepath.Clean(host.Home) {
			realHome = r
		}
	}
	for _, p := range list {
		abs := filepath.Clean(host.expandHome(p))
		if !filepath.IsAbs(abs) {
			continue
		}
		add(abs)
		if realHome != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
			add(filepath.Join(realHome, strings.TrimPrefix(strings.TrimPrefix(p, "~"), "/")))
		}
		// A symlinked credential dir is unreadable under both names.
		if real, err := res.eval(abs); err == nil {
			add(real)
		}
	}
	sort.Strings(out)
	return out
}

// resolver is filepath.EvalSymlinks for absolute paths, resolving each
// directory once: the credential list names dozens of paths under the
// same few directories (~, ~/.config, ~/.local/share), and EvalSymlinks
// walks each from the root again, an lstat per component, on every run.
type resolver struct {
	rd *hostread.Recorder
	m  map[string]resolved
}

type resolved struct {
	path string
	err  error
}

func (r resolver) eval(p string) (string, error) {
	p = filepath.Clean(p)
	if v, ok := r.m[p]; ok {
		return v.path, v.err
	}
	path, err := r.resolve(p)
	r.m[p] = resolved{path, err}
	return path, err
}

// resolve canonicalises p's parent (once, through eval), then its last
// element: a symlink there is resolved whole from the canonical parent.
func (r resolver) resolve(p string) (string, error) {
	rd := r.rd
	dir, base := filepath.Split(p)
	if base == "" || !filepath.IsAbs(dir) {
		return rd.EvalSymlinks(p)
	}
	parent, err := r.eval(dir)
	if err != nil {
		return "", err
	}
	joined := filepath.Join(parent, base)
	fi, err := rd.Lstat(joined)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return rd.EvalSymlinks(joined)
	}
	return joined, nil
}

// toolPrefixCredentials makes unreadable the tool configs that may hold
// a token relative to each read-only mount that may be a tool's prefix
// (the host toolchain, read_only, the python environment): not the
// workspace root or the checkout, whose files are the project's.
func toolPrefixCredentials(p *Policy) {
	for _, m := range p.Mounts {
		if !m.ReadOnly || m.Discard || m.Kind != "dir" || m.Path == p.WorkspaceRoot || m.Why == "project checkout" {
			continue
		}
		for _, rel := range profiles.ToolPrefixCredentialPaths() {
			p.Unreadable = appendNew(p.Unreadable, filepath.Join(m.Path, rel))
		}
	}
	sort.Strings(p.Unreadable)
}

// maskUnderMounts decides what the backend must hide under the policy's
// mounts (p.Masked): the unreadable paths a mount would expose, and every
// unix socket found under a mount. It warns when a mount covers the
// caller's home.
func maskUnderMounts(p *Policy, host Host) {
	rd := host.Reads
	masked := maskedUnder(p.Unreadable, p.Mounts)
	// A host root exposes what is in it like a mount (a system gitconfig
	// in /etc, an npmrc in /usr/etc).
	for _, r := range p.Base.HostRoots {
		masked = append(masked, maskedUnder(p.Unreadable, []Mount{{Path: r}})...)
	}
	var warnings []string
	if !p.AllowAll {
		warnings = homeCovered(p.Mounts, masked, host)
	}
	hidden := hiddenSet(p.Mounts)
	for _, m := range p.Mounts {
		if m.System {
			continue // only root can make a socket there: see systemDir
		}
		masked = append(masked, m.Hidden...)
		socks, truncated := socketsUnder(rd, m, hidden)
		masked = append(masked, socks...)
		if truncated {
			warnings = append(warnings, fmt.Sprintf("the %s %s holds more than %d entries: the scan for host sockets "+
				"to mask stopped there, so a socket deeper in it is reachable — mount a smaller directory", m.Why, m.Path, socketScanEntries))
		}
	}
	p.Masked = dedupe(masked)
	p.Warnings = append(p.Warnings, warnings...)
}

// maskedUnder returns the unreadable paths that a mount would expose.
func maskedUnder(unreadable []string, mounts []Mount) []string {
	var out []string
	for _, u := range unreadable {
		for _, m := range mounts {
			if within(m.Path, u) {
				out = append(out, u)
				break
			}
		}
	}
	return out
}

// homeCovered warns for each mount that is the caller's home or above it:
// the known credential stores in it are masked, nothing else is.
func homeCovered(mounts []Mount, masked []string, host Host) []string {
	rd := host.Reads
	if host.Home == "" {
		return nil
	}
	homes := []string{filepath.Clean(host.Home)}
	if r, err := rd.EvalSymlinks(host.Home); err == nil && r != homes[0] {
		homes = append(homes, r)
	}
	var out []string
	for _, m := range mounts {
		i := slices.IndexFunc(homes, func(h string) bool { return within(m.Path, h) })
		if i < 0 {
			continue
		}
		home := homes[i]
		var n int
		var present []string
		for _, u := range masked {
			// Count stores, not the paths inside one (~/.docker/run/docker.sock).
			if !within(home, u) || slices.ContainsFunc(masked, func(o string) bool { return o != u && within(o, u) }) {
				continue
			}
			n++
			if _, err := rd.Lstat(u); err == nil {
				present = append(present, strings.TrimPrefix(u, home+"/"))
			}
		}
		now := "none present now"
		if len(present) > 0 {
			if len(present) > 8 {
				present = append(present[:8], fmt.Sprintf("and %d more", len(present)-8))
			}
			now = "present now: " + strings.Join(present, ", ")
		}
		out = append(out, fmt.Sprintf("the %s %s covers your home directory %s: its %d known credential stores are masked (%s); "+
			"anything else in it is readable — put the workspace in its own directory", m.Why, m.Path, home, n, now))
	}
	return out
}

// socketsUnder returns the unix sockets under a mount, however deep,
// breadth first within the scan's entry budget (truncated says it ran
// out). Symlinks are not followed; .git directories are walked like any
// other. Out of budget, the .git directories of what is left in the queue
// are still looked at (git's fsmonitor daemon keeps its socket there).
// A hidden directory (Mount.Hidden, masked whole) is not walked.
func socketsUnder(rd *hostread.Recorder, m Mount, hidden map[string]bool) (socks []string, truncated bool) {
	if m.NoSockets {
		return nil, false
	}
	fi, err := rd.Lstat(m.Path)
	if err != nil {
		return nil, false
	}
	if fi.Mode()&fs.ModeSocket != 0 {
		return []string{m.Path}, false
	}
	if !fi.IsDir() {
		return nil, false
	}
	queue := []string{m.Path}
	budget := socketScanEntries
	buf := make([]byte, direntBufSize)
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if budget <= 0 {
			truncated = true
			socks = append(socks, gitSockets(rd, filepath.Join(dir, ".git"), 0, buf)...)
			continue
		}
		entries, more := readDir(rd, dir, budget, buf)
		budget -= len(entries)
		truncated = truncated || more
		for _, e := range entries {
			if !e.sock && !e.dir {
				continue // most entries: no path to build
			}
			p := joinName(dir, e.name)
			switch {
			case e.sock:
				socks = append(socks, p)
			case !hidden[p]:
				queue = append(queue, p)
			}
		}
	}
	return socks, truncated
}

// joinName is filepath.Join for a clean directory and one name, without
// Join's cleaning pass (the scan makes one per directory it walks).
func joinName(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// gitSockets returns the sockets directly in a git directory and in the
// git directories of its worktrees and submodules (nested submodules a
// few levels down).
func gitSockets(rd *hostread.Recorder, gitDir string, depth int, buf []byte) []string {
	entries, _ := readDir(rd, gitDir, 1000, buf)
	var out []string
	for _, e := range entries {
		p := filepath.Join(gitDir, e.name)
		switch {
		case e.sock:
			out = append(out, p)
		case e.dir && (e.name == "worktrees" || e.name == "modules") && depth < 4:
			subs, _ := readDir(rd, p, 1000, buf)
			for _, s := range subs {
				if s.dir {
					out = append(out, gitSockets(rd, filepath.Join(p, s.name), depth+1, buf)...)
				}
			}
		}
	}
	return out
}

// dirEntry is what the scan needs of a directory entry: its name and
// whether it is a directory or a socket (never following a symlink).
type dirEntry struct {
	name      string
	dir, sock bool
}

func dedupe(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
