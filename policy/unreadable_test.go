package policy

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// plant creates files (a trailing "/" makes a directory) under dir.
func plant(t *testing.T, dir string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		p := filepath.Join(dir, rel)
		if strings.HasSuffix(rel, "/") {
			must(t, os.MkdirAll(p, 0o700))
			continue
		}
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte("secret\n"), 0o600))
	}
}

// listen makes a unix socket listening at path, closed with the test.
func listen(t *testing.T, path string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

// stores are credential stores of the hostile review's list, relative to
// the home.
var stores = []string{
	".npmrc", ".yarnrc.yml", ".config/git/credentials", ".cargo/credentials.toml", ".pip/pip.conf",
	".config/pip/", ".gem/credentials", ".docker/", ".kube/", ".config/gcloud/", ".azure/", ".aws/",
	".oci/", ".config/doctl/", ".terraform.d/", ".vault-token", ".password-store/", ".local/share/keyrings/",
	".mozilla/", ".config/google-chrome/", ".bash_history", ".zsh_history", ".python_history",
	".node_repl_history", ".psql_history", ".local/share/fish/fish_history", ".netrc", ".pgpass",
	".ssh/", ".gnupg/", ".claude.json", ".cache/huggingface/token", ".config/rclone/",
}

// TestHomeAsWorkspaceMasksEveryStore is the review's case: no config, the
// workspace is the home. It still builds, every known store under it is
// masked (present or not), and a warning says the rest of the home is
// readable.
func TestHomeAsWorkspaceMasksEveryStore(t *testing.T) {
	home := t.TempDir()
	plant(t, home, stores...)
	host := Host{Home: home, OS: "linux", UID: 1000, GID: 1000, Cwd: home}
	for _, role := range profiles.Roles() {
		p, err := Build(config.Default(home), role, host, Options{})
		must(t, err)
		for _, s := range stores {
			if want := filepath.Join(home, strings.TrimSuffix(s, "/")); !slices.Contains(p.Masked, want) {
				t.Errorf("%s: %s is not masked", role, want)
			}
		}
		// Every known store is listed, also the ones absent now: the
		// runtime masks what exists when the sandbox starts.
		for _, c := range profiles.CredentialPaths() {
			if want := host.expandHome(c); strings.HasPrefix(want, home+"/") && !slices.Contains(p.Masked, want) {
				t.Errorf("%s: %s (absent) is not masked", role, want)
			}
		}
		i := slices.IndexFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "covers your home directory") })
		if i < 0 {
			t.Fatalf("%s: no warning that the workspace covers the home: %q", role, p.Warnings)
		}
		w := p.Warnings[i]
		for _, want := range []string{"workspace root " + home, "credential stores are masked", ".aws", "and 25 more", "anything else in it is readable"} {
			if !strings.Contains(w, want) {
				t.Errorf("%s: warning %q lacks %q", role, w, want)
			}
		}
	}
}

// TestCheckoutCoveringHomeWarns: a workspace inside the home whose project
// checkout is the home itself.
func TestCheckoutCoveringHomeWarns(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "triage")
	must(t, os.MkdirAll(ws, 0o755))
	plant(t, home, ".npmrc", ".bash_history")
	path := filepath.Join(ws, config.FileName)
	must(t, os.WriteFile(path, []byte("[project]\ncheckout = \"..\"\n"), 0o644))
	cfg, err := config.Load(path)
	must(t, err)
	p, err := Build(cfg, "reproducer", Host{Home: home, OS: "linux", UID: 1000, GID: 1000}, Options{})
	must(t, err)
	if !slices.Contains(p.Masked, filepath.Join(home, ".npmrc")) || !slices.Contains(p.Masked, filepath.Join(home, ".bash_history")) {
		t.Errorf("masked %q", p.Masked)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool {
		return strings.Contains(w, "project checkout "+home+" covers your home directory")
	}) {
		t.Errorf("warnings %q", p.Warnings)
	}
}

// TestHomeApartNoWarning: a workspace beside the home masks nothing of
// the home and says nothing about it (the host toolchain's tool configs
// are masked, TestToolchainCredentialConfigsMasked).
func TestHomeApartNoWarning(t *testing.T) {
	base := t.TempDir()
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	must(t, os.MkdirAll(ws, 0o755))
	plant(t, home, ".npmrc")
	p, err := Build(config.Default(ws), "agent", Host{Home: home, OS: "linux", UID: 1000, GID: 1000}, Options{})
	must(t, err)
	if slices.ContainsFunc(p.Masked, func(m string) bool { return within(base, m) }) {
		t.Errorf("masked %q", p.Masked)
	}
	if slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "home directory") }) {
		t.Errorf("warnings %q", p.Warnings)
	}
}

// TestHomeThroughSymlink: the home is reached through a symlink, mounts are
// canonical; a store absent now is masked under the canonical name too.
func TestHomeThroughSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	must(t, os.MkdirAll(real, 0o755))
	link := filepath.Join(base, "home")
	must(t, os.Symlink(real, link))
	p, err := Build(config.Default(real), "agent", Host{Home: link, OS: "linux", UID: 1000, GID: 1000}, Options{})
	must(t, err)
	if !slices.Contains(p.Masked, filepath.Join(real, ".npmrc")) {
		t.Errorf("~/.npmrc under the canonical home is not masked: %q", p.Masked)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "covers your home directory "+real) }) {
		t.Errorf("warnings %q", p.Warnings)
	}
}

// TestSocketsUnderMountsMasked: a host daemon's socket in the workspace
// (git's fsmonitor socket in a .git, another in a subdirectory) and one in
// the checkout are masked; a regular file is not.
func TestSocketsUnderMountsMasked(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	checkout := filepath.Join(filepath.Dir(cfg.Root), "widgets")
	socks := []string{
		filepath.Join(cfg.Root, ".git", "fsmonitor--daemon.ipc"),
		filepath.Join(cfg.Root, "sub", "dir", "app.sock"),
		filepath.Join(checkout, ".git", "fsmonitor--daemon.ipc"),
		filepath.Join(checkout, ".git", "worktrees", "wt", "fsmonitor--daemon.ipc"),
		filepath.Join(cfg.Root, "repros", "x.sock"), // in a writable mount
	}
	for _, s := range socks {
		listen(t, s)
	}
	plant(t, cfg.Root, "sub/dir/plain")
	p, err := Build(cfg, "agent", fakeHost(t), Options{})
	must(t, err)
	for _, s := range socks {
		if !slices.Contains(p.Masked, s) {
			t.Errorf("socket %s is not masked: %q", s, p.Masked)
		}
	}
	if slices.Contains(p.Masked, filepath.Join(cfg.Root, "sub", "dir", "plain")) {
		t.Error("a regular file is masked")
	}
	if !slices.Contains(p.Requirements(), profiles.CapMaskUnderMount) {
		t.Error("a policy with masked sockets must require mask_under_mount")
	}
}

// TestSocketScanBounds: the scan has no depth bound and walks into .git
// directories (finding #7: a socket deep under a checkout's .git, or past
// the old depth bound, was reachable); it stops only at its entry budget,
// says so, and still looks into the .git of a directory it stopped at.
func TestSocketScanBounds(t *testing.T) {
	defer func(e int) { socketScanEntries = e }(socketScanEntries)
	root := t.TempDir()
	shallow := filepath.Join(root, "a", "s.sock")
	deep := filepath.Join(root, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "deep.sock")
	deepGit := filepath.Join(root, "a", "b", "c", ".git", "fsmonitor--daemon.ipc")
	inGit := filepath.Join(root, ".git", "refs", "heads", "x", "in-git.sock")
	for _, s := range []string{shallow, deep, deepGit, inGit} {
		listen(t, s)
	}
	got, truncated := socketsUnder(nil, Mount{Path: root, Kind: "dir"}, nil)
	slices.Sort(got)
	want := []string{shallow, deep, deepGit, inGit}
	slices.Sort(want)
	if truncated || !slices.Equal(got, want) {
		t.Errorf("no depth bound: got %q truncated %v, want %q", got, truncated, want)
	}

	// Out of entries after reading 5 of the root's 10 directories: the
	// 5 queued ones are not read, but their .git directories are.
	socketScanEntries = 5
	root = t.TempDir()
	for i := range 10 {
		d := filepath.Join(root, "d"+string(rune('0'+i)))
		listen(t, filepath.Join(d, ".git", "fsmonitor--daemon.ipc"))
		listen(t, filepath.Join(d, "late.sock"))
	}
	got, truncated = socketsUnder(nil, Mount{Path: root, Kind: "dir"}, nil)
	var git, other int
	for _, s := range got {
		if strings.HasSuffix(s, "/.git/fsmonitor--daemon.ipc") {
			git++
		} else {
			other++
		}
	}
	if !truncated || git != 5 || other != 0 {
		t.Errorf("entry bound: got %q truncated %v; want the 5 queued directories' .git sockets only", got, truncated)
	}
}

// TestSocketScanTruncatedWarns: a mount whose scan ran out of budget is
// named in a warning, since a socket past it is not masked.
func TestSocketScanTruncatedWarns(t *testing.T) {
	defer func(e int) { socketScanEntries = e }(socketScanEntries)
	socketScanEntries = 3
	cfg := workspace(t, "")
	for i := range 5 {
		plant(t, cfg.Root, filepath.Join("many", "f"+string(rune('0'+i))))
	}
	p, err := Build(cfg, "agent", fakeHost(t), Options{})
	must(t, err)
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "scan for host sockets") }) {
		t.Errorf("no warning for a truncated socket scan: %q", p.Warnings)
	}
}
