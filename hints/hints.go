// Package hints tells the user when a failed command's output points at a
// sandbox restriction rather than at the code under test: a write refused
// on a read-only path, an unreachable network, a tool the image lacks but
// the host has, a host path the sandbox cannot see. It only reads what the
// output pipeline showed (already redacted); no hint when nothing points
// to the sandbox.
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

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Host is what hints may ask about the host.
type Host struct {
	// LookPath finds a command on the host (exec.LookPath by default).
	LookPath func(string) (string, error)
	// Exists says whether a host path exists (os.Stat by default).
	Exists func(string) bool
}

func (h Host) lookPath(name string) (string, error) {
	if h.LookPath != nil {
		return h.LookPath(name)
	}
	return exec.LookPath(name)
}

func (h Host) exists(path string) bool {
	if h.Exists != nil {
		return h.Exists(path)
	}
	_, err := os.Stat(path)
	return err == nil
}

// hintPatterns are compiled on first use: only a failed run reads them, and
// every start of the binary would pay for them at package init.
type hintPatterns struct {
	readOnly, missing, denied []*regexp.Regexp
	network                   *regexp.Regexp
}

var patterns = sync.OnceValue(func() hintPatterns {
	return hintPatterns{readOnly: []*regexp.Regexp{
		regexp.MustCompile(`Read-only file system: '([^']+)'`),
		regexp.MustCompile(`(/[^\s:'"]+): Read-only file system`),
		regexp.MustCompile(`cannot (?:create|touch|remove|open)[^\n]*'(/[^']+)'[^\n]*Read-only file system`),
	},
		network: regexp.MustCompile(`(?i)network is unreachable|temporary failure in name resolution|name or service not known|could not resolve host|EAI_AGAIN|ENETUNREACH|getaddrinfo failed|failed to establish a new connection`),
		missing: []*regexp.Regexp{
			regexp.MustCompile(`(?m)(?:^|\s)(?:sh|bash|dash|zsh)?:?\s*(?:\d+:\s*)?([A-Za-z0-9._+-]+): (?:command )?not found`),
			regexp.MustCompile(`No such file or directory: '([A-Za-z0-9._+-]+)'`),
			regexp.MustCompile(`triage-sandbox: ([A-Za-z0-9._+-]+): command not found in the sandbox`),
		},
		denied: []*regexp.Regexp{
			regexp.MustCompile(`Permission denied: '(/[^']+)'`),
			regexp.MustCompile(`(/[^\s:'"]+): Permission denied`),
		}}
})

// From returns the hints for a run that ended with exitCode and showed
// output; none for a run that succeeded.
func From(p *policy.Policy, output string, exitCode int, h Host) []string {
	if exitCode == 0 || p == nil || p.AllowAll {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	pats := patterns()
	for _, re := range pats.readOnly {
		for _, m := range re.FindAllStringSubmatch(output, 8) {
			if hint := readOnly(p, m[1]); hint != "" {
				add(hint)
			}
		}
	}
	if p.Network.LoopbackOnly() && pats.network.MatchString(output) {
		add("the output shows a network failure: the sandbox reaches only its own loopback ([sandbox] network = false); a reproducer that needs the network cannot run here")
	}
	for _, re := range pats.missing {
		for _, m := range re.FindAllStringSubmatch(output, 8) {
			if where, err := h.lookPath(m[1]); err == nil {
				add(fmt.Sprintf("%s is missing in the sandbox but the host has it (%s): add it to the image (images/Dockerfile, or [sandbox] image)", m[1], where))
			}
		}
	}
	for _, re := range pats.denied {
		for _, m := range re.FindAllStringSubmatch(output, 8) {
			if hint := denied(p, m[1], h); hint != "" {
				add(hint)
			}
		}
	}
	sort.Strings(out)
	return out
}

// readOnly names the config key when a refused write fell on a path the
// sandbox mounts read-only (the workspace or the checkout).
func readOnly(p *policy.Policy, path string) string {
	path = filepath.Clean(path)
	var m *policy.Mount // the innermost mount holding path decides
	for i := range p.Mounts {
		if within(p.Mounts[i].Path, path) && (m == nil || len(p.Mounts[i].Path) > len(m.Path)) {
			m = &p.Mounts[i]
		}
	}
	if m != nil {
		if !m.ReadOnly {
			return ""
		}
		if rel, err := filepath.Rel(p.WorkspaceRoot, path); err == nil && m.Path == p.WorkspaceRoot {
			return fmt.Sprintf("a write to %s was refused: the workspace is read-only except its outputs; to let the %s role write there, add %q to [sandbox] writable", path, p.Role, firstPart(rel))
		}
		return fmt.Sprintf("a write to %s was refused: %s is mounted read-only (%s); write under the outputs or the scratch ($TMPDIR) instead", path, m.Path, m.Why)
	}
	return ""
}

// denied hints at a host path that exists but is not mounted.
func denied(p *policy.Policy, path string, h Host) string {
	path = filepath.Clean(path)
	for _, m := range p.Mounts {
		if within(m.Path, path) {
			return ""
		}
	}
	for _, u := range p.Unreadable {
		if within(u, path) {
			return ""
		}
	}
	if !h.exists(path) {
		return ""
	}
	return fmt.Sprintf("%s exists on the host but is not visible in the sandbox: mount it read-only with [sandbox] read_only if the command needs it", path)
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
