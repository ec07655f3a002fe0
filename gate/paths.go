package gate

import (
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// scratchDirs hold temporary files that may be deleted without harm:
// inside a sandbox they are its own (on macOS, TMPDIR is under
// /var/folders).
func scratchDirs() []string {
	return []string{"/tmp", "/var/tmp", "/private/tmp", "/var/folders", "/private/var/folders"}
}

// dangerousTarget says why deleting (or chmod-ing) a path recursively
// would reach too far, or "" when it stays inside what the command may
// touch: relative paths that do not climb out, and paths strictly inside
// the workspace, a writable path or a scratch directory.
func (g *Gate) dangerousTarget(a arg) string {
	if a.dynamic {
		return "a path only known at run time"
	}
	t := a.text
	switch {
	case t == "":
		return ""
	case strings.HasPrefix(t, "~"):
		return "the home directory"
	}
	p := path.Clean(t)
	everything := false
	if base := path.Base(p); base == "*" || base == ".*" || base == ".[!.]*" || base == "..?*" {
		// Every entry of the directory: as bad as the directory itself.
		p, everything = path.Dir(p), true
	}
	if !path.IsAbs(p) {
		switch {
		case p == ".":
			if everything {
				return "everything in the current directory"
			}
			return "the current directory"
		case p == ".." || strings.HasPrefix(p, "../"):
			return "a path outside the current directory"
		}
		return ""
	}
	if p == "/" {
		return "the root directory"
	}
	roots := append(append([]string{g.workspace}, g.writable...), scratchDirs()...)
	for _, root := range roots {
		if root != "" && (root == "/" || strings.HasPrefix(p, root+"/")) {
			return ""
		}
	}
	return "an absolute path outside the workspace and writable paths"
}

// isDiskDevice reports whether a path is a disk (or memory) device.
func isDiskDevice(p string) bool {
	p = path.Clean(p)
	dev, ok := strings.CutPrefix(p, "/dev/")
	if !ok {
		return false
	}
	for _, prefix := range []string{"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "mapper/", "dm-", "md", "loop"} {
		if strings.HasPrefix(dev, prefix) {
			return true
		}
	}
	return dev == "mem" || dev == "kmem" || dev == "port"
}

// credentialPath is one of the credential paths under a home directory, as
// the path components an argument is split into.
type credentialPath struct {
	path  string   // as the list names it: "~/.ssh"
	parts []string // ".ssh"
}

// credentials are the home-relative entries of profiles.CredentialPaths,
// the list the policy makes unreadable, and markers are strings one of
// which an argument must contain to name any of them (a cheap first test).
// Computed once, on first use; never changed.
var credentialTables = sync.OnceValues(func() ([]credentialPath, []string) {
	return credentialTable(profiles.CredentialPaths())
})

func credentialTable(list []string) ([]credentialPath, []string) {
	var table []credentialPath
	var markers []string
	for _, p := range list {
		rel, ok := strings.CutPrefix(p, "~/")
		if !ok {
			continue // not under a home directory: the gate does not look for it
		}
		parts := splitPathArg(rel)
		table = append(table, credentialPath{path: p, parts: parts})
		marker := parts[0]
		if strings.HasPrefix(marker, ".") {
			marker = "."
		}
		if !slices.Contains(markers, marker) {
			markers = append(markers, marker)
		}
	}
	return table, markers
}

// homeCredentialPaths are the credential paths the gate looks for, without
// their "~/", for the rule's description.
func homeCredentialPaths() []string {
	credentials, _ := credentialTables()
	out := make([]string, len(credentials))
	for i, c := range credentials {
		out[i] = strings.TrimPrefix(c.path, "~/")
	}
	return out
}

// splitPathArg splits an argument into the components secretPath compares.
func splitPathArg(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune("/=:@ \t\n\"'{}", r) })
}

// secretPath returns the credential path an argument names, or "". It
// looks at path components under a home directory (~, ~user, $HOME,
// /root, /home/user, /Users/user), so --key=~/.ssh/id_rsa and $HOME/.aws
// count while a project's own .docker/ directory does not.
func secretPath(text string) string {
	credentials, credentialMarkers := credentialTables()
	if !slices.ContainsFunc(credentialMarkers, func(m string) bool { return strings.Contains(text, m) }) {
		return "" // the common case, cheaply
	}
	parts := splitPathArg(text)
	for i := 1; i < len(parts); i++ {
		if !homeAt(parts, i) {
			continue
		}
		for _, c := range credentials {
			if i+len(c.parts) <= len(parts) && equalParts(parts[i:i+len(c.parts)], c.parts) {
				return c.path
			}
		}
	}
	return ""
}

// homeAt reports whether parts[i] is directly inside a home directory.
func homeAt(parts []string, i int) bool {
	prev := parts[i-1]
	switch {
	case strings.HasPrefix(prev, "~"), prev == "$HOME", prev == "HOME" && i >= 2 && parts[i-2] == "$", prev == "root":
		return true
	case i >= 2 && (parts[i-2] == "home" || parts[i-2] == "Users"):
		return true
	}
	return false
}

func equalParts(a, b []string) bool {
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
