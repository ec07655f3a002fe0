package seatbelt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	r := macFS(map[string]string{
		"/Users/me/.ssh":        "/Volumes/keys/ssh",
		"/Users/me/dotfiles/gh": "../.config/real-gh",
		"/loop/a":               "/loop/b",
		"/loop/b":               "/loop/a",
	}, "/Users/me/work/ws", "/Volumes/keys/ssh", "/Users/me/.config/real-gh", "/private/var/folders/ab/T")
	tests := []struct{ in, want string }{
		{"/tmp", "/private/tmp"},
		{"/tmp/run 1/home", "/private/tmp/run 1/home"}, // missing below an existing ancestor
		{"/var/folders/ab/T/x", "/private/var/folders/ab/T/x"},
		{"/etc/hosts", "/private/etc/hosts"},
		{"/private/tmp/x", "/private/tmp/x"},
		{"/Users/me/work/ws", "/Users/me/work/ws"}, // a firmlink keeps its name
		{"/Users/me/.ssh/id_ed25519", "/Volumes/keys/ssh/id_ed25519"},
		{"/Users/me/dotfiles/gh/hosts.yml", "/Users/me/.config/real-gh/hosts.yml"}, // relative target with ..
		{"/Users/me//work/./ws/", "/Users/me/work/ws"},
		{"/Users/me/ünïcødé [x] \"q\"", "/Users/me/ünïcødé [x] \"q\""},
	}
	for _, tc := range tests {
		got, err := r.Canonical(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	bad := []struct{ in, why string }{
		{"relative/x", "not absolute"},
		{"/Users/me/../root", `contains ".."`},
		{"/Users/me/a\x00b", "control character"},
		{"/Users/me/a\nb", "control character"},
		{"/Users/me/a\x1bb", "control character"},
		{"/Users/me/\xff", "not valid UTF-8"},
		{"/" + strings.Repeat("a", maxPath), "bytes, over"},
		{"/loop/a/x", "too many levels"},
	}
	for _, tc := range bad {
		if got, err := r.Canonical(tc.in); err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Canonical(%q) = %q, %v; want an error about %q", tc.in, got, err, tc.why)
		}
	}
}

// TestHostResolver resolves real symlinks through the nearest existing
// ancestor, and gives /tmp's macOS spelling even where /tmp is a directory.
func TestHostResolver(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	resolvedDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := HostResolver().Canonical(filepath.Join(dir, "link", "not-yet", "f"))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(resolvedDir, "real", "not-yet", "f")
	for _, l := range macRootLinks {
		if want == l.from || strings.HasPrefix(want, l.from+"/") {
			want = l.to + want[len(l.from):]
		}
	}
	if got != want {
		t.Errorf("Canonical = %q, want %q", got, want)
	}
}
