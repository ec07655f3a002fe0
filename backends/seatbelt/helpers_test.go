package seatbelt

import (
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// fakeFS is a filesystem of symlinks and existing paths, to canonicalise as
// macOS would on any machine.
type fakeFS struct {
	links  map[string]string
	exists map[string]bool
}

// newFakeFS knows every listed path and its parents; links are symlinks.
func newFakeFS(links map[string]string, paths ...string) *fakeFS {
	f := &fakeFS{links: links, exists: map[string]bool{"/": true}}
	add := func(p string) {
		for d := p; d != "/" && d != "."; d = filepath.Dir(d) {
			f.exists[d] = true
		}
	}
	for l := range links {
		add(filepath.Dir(l))
	}
	for _, p := range paths {
		add(p)
	}
	return f
}

func (f *fakeFS) Readlink(p string) (string, bool, error) {
	if t, ok := f.links[p]; ok {
		return t, true, nil
	}
	if f.exists[p] {
		return "", false, nil
	}
	return "", false, fs.ErrNotExist
}

// macLinks are macOS's root symlinks, written as macOS has them.
var macLinks = map[string]string{"/tmp": "private/tmp", "/var": "private/var", "/etc": "private/etc"}

func macFS(extraLinks map[string]string, paths ...string) Resolver {
	links := map[string]string{}
	for k, v := range macLinks {
		links[k] = v
	}
	for k, v := range extraLinks {
		links[k] = v
	}
	return Resolver{FS: newFakeFS(links, append(paths, "/private/tmp", "/private/var/folders", "/private/etc")...)}
}

// unreadableFor expands the built-in credential list, runtime sockets and
// state directory for home, as policy.Build does.
func unreadableFor(home string) []string {
	var out []string
	list := append(profiles.CredentialPaths(), profiles.RuntimeSockets()...)
	list = append(list, "~/.local/state/triage-sandbox")
	for _, p := range list {
		if strings.HasPrefix(p, "~/") {
			p = filepath.Join(home, p[2:])
		}
		out = append(out, p)
	}
	return out
}

// macHostRoots are profiles.HostRoots as they exist on macOS.
var macHostRoots = []string{"/bin", "/sbin", "/usr", "/etc", "/opt/homebrew", "/System", "/Library/Frameworks", "/private/etc"}

// handPolicy is a policy for role as policy.Build would make it on a Mac
// for a workspace at root and a caller whose home is home.
func handPolicy(role profiles.Role, home, root, checkout string, mode policy.NetworkMode) *policy.Policy {
	p := &policy.Policy{
		Role: role, Backend: Name, WorkspaceRoot: root, Workdir: root,
		Base:     policy.Base{Kind: policy.BaseHost, HostRoots: macHostRoots},
		Network:  policy.Network{Mode: mode},
		User:     policy.Identity{UID: 501, GID: 20, Why: "the caller"},
		Scratch:  policy.Scratch{Size: 256 << 20, HomeMode: 0o700, TmpMode: 0o1777, Exec: true, NoSuid: true, NoDev: true},
		Lifetime: policy.Lifetime{Lifeline: true, TTLMargin: time.Minute, KillGrace: time.Second},
		Limits:   profiles.DefaultLimits(role),
		Env:      []policy.EnvVar{{Name: "PATH", Value: "/usr/bin:/bin"}, {Name: "LANG", Value: "C.UTF-8"}},
	}
	p.Mounts = append(p.Mounts, policy.Mount{Path: checkout, ReadOnly: true, Kind: "dir", Why: "project checkout"})
	writable := profiles.Writable(role)
	hasFile := false
	for _, w := range writable {
		kind := "dir"
		if strings.Contains(w, ".") && !strings.HasPrefix(w, ".") {
			kind, hasFile = "file", true
		}
		p.Mounts = append(p.Mounts, policy.Mount{Path: filepath.Join(root, w), Kind: kind, Why: "writable (" + w + ")"})
	}
	if hasFile {
		// The workspace root is a skeleton: its other entries are read-only mounts.
		p.Staging.Skeletons = []string{root}
		p.Mounts = append(p.Mounts, policy.Mount{Path: filepath.Join(root, "triage.toml"), ReadOnly: true, Kind: "file"},
			policy.Mount{Path: filepath.Join(root, "docs"), ReadOnly: true, Kind: "dir"})
		p.Staging.Links = []string{filepath.Join(root, "latest")}
	} else {
		p.Mounts = append(p.Mounts, policy.Mount{Path: root, ReadOnly: true, Kind: "dir", Why: "workspace root"})
	}
	p.Unreadable = unreadableFor(home)
	return p
}
