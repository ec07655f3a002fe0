//go:build unix

package hostfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const nobody = 65534

// TestPrivateDir plants what another user could leave where
// triage-sandbox keeps its state, and checks each is refused with a line
// naming the path, while the caller's own directories are used.
func TestPrivateDir(t *testing.T) {
	root := os.Geteuid() == 0
	cases := []struct {
		name     string
		needRoot bool
		// setup returns the directory to ask for.
		setup   func(t *testing.T, base string) string
		owned   bool   // OwnedDir instead of PrivateDir
		refused string // "" when it must be used
	}{
		{name: "missing, made 0700", setup: func(t *testing.T, base string) string { return filepath.Join(base, "a", "b") }},
		{name: "the caller's 0700", setup: func(t *testing.T, base string) string { return mkdir(t, base, "d", 0o700) }},
		{name: "the caller's, group-readable", refused: "has mode 0750",
			setup: func(t *testing.T, base string) string { return mkdir(t, base, "d", 0o750) }},
		{name: "the caller's 0755 as an owned dir", owned: true,
			setup: func(t *testing.T, base string) string { return mkdir(t, base, "d", 0o755) }},
		{name: "the caller's 0777 as an owned dir", owned: true, refused: "has mode 0777",
			setup: func(t *testing.T, base string) string { return mkdir(t, base, "d", 0o777) }},
		{name: "a symlink to the caller's own", refused: "is a symlink",
			setup: func(t *testing.T, base string) string {
				mkdir(t, base, "real", 0o700)
				return symlink(t, base, "real", "d", -1)
			}},
		{name: "another user's 0777", needRoot: true, refused: "owned by uid 65534",
			setup: func(t *testing.T, base string) string { return chown(t, mkdir(t, base, "d", 0o777)) }},
		{name: "another user's 0700 as an owned dir", needRoot: true, owned: true, refused: "owned by uid 65534",
			setup: func(t *testing.T, base string) string { return chown(t, mkdir(t, base, "d", 0o700)) }},
		{name: "below another user's directory", needRoot: true, refused: "not by you or root",
			setup: func(t *testing.T, base string) string {
				return mkdir(t, chown(t, mkdir(t, base, "u", 0o755)), "d", 0o700)
			}},
		{name: "below a world-writable, not sticky directory", refused: "could replace",
			setup: func(t *testing.T, base string) string { return mkdir(t, mkdir(t, base, "w", 0o777), "d", 0o700) }},
		{name: "below a sticky world-writable directory", setup: func(t *testing.T, base string) string {
			return filepath.Join(mkdir(t, base, "tmp", os.ModeSticky|0o777), "triage-sandbox-1", "warm")
		}},
		{name: "below the caller's symlink to a directory", setup: func(t *testing.T, base string) string {
			mkdir(t, base, "real", 0o755)
			return filepath.Join(symlink(t, base, "real", "link", -1), "d")
		}},
		{name: "below another user's symlink in a sticky directory", needRoot: true, refused: "symlink made by uid 65534",
			setup: func(t *testing.T, base string) string {
				tmp := mkdir(t, base, "tmp", os.ModeSticky|0o777)
				mkdir(t, base, "real", 0o755)
				return filepath.Join(symlink(t, tmp, "../real", "triage-sandbox-0", nobody), "warm")
			}},
		{name: "a file", refused: "not a directory", setup: func(t *testing.T, base string) string {
			p := filepath.Join(base, "f")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.needRoot && !root {
				t.Skip("needs root to plant another user's files")
			}
			dir := c.setup(t, t.TempDir())
			check := PrivateDir
			if c.owned {
				check = OwnedDir
			}
			err := check(dir)
			if c.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				fi, err := os.Stat(dir)
				if err != nil || !fi.IsDir() {
					t.Fatalf("not made: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "/") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want one line naming the path, with %q; got %v", c.refused, err)
			}
		})
	}
}

func mkdir(t *testing.T, parent, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(parent, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func chown(t *testing.T, p string) string {
	t.Helper()
	if err := os.Lchown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, parent, target, name string, uid int) string {
	t.Helper()
	p := filepath.Join(parent, name)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		chown(t, p)
	}
	return p
}

func TestOpenNoFollowAndReplaceRefusePlantedNames(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := symlink(t, dir, victim, "k.log", -1)
	if f, err := OpenNoFollow(link, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err == nil {
		f.Close()
		t.Fatal("opened through a symlink")
	}
	symlink(t, dir, victim, "k.json."+strconv.Itoa(os.Getpid())+".tmp", -1)
	if err := WriteFileReplace(filepath.Join(dir, "k.json"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "own\n" {
		t.Fatalf("written through a planted name: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "k.json")); string(b) != "{}" {
		t.Fatalf("record: %q", b)
	}
	f, err := OpenNoFollow(filepath.Join(dir, "new"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
