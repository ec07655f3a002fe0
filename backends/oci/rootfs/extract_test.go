package rootfs

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ent is one tar entry for the tests; body is a regular file's content.
type ent struct {
	hdr  tar.Header
	body string
}

func file(name, body string, mode int64) ent {
	return ent{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: time.Unix(1_600_000_000, 0)}, body}
}

func dir(name string, mode int64) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: time.Unix(1_500_000_000, 0)}}
}

func symlink(name, target string) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: time.Unix(1_400_000_000, 0)}}
}

func hardlink(name, target string) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o644}}
}

func special(name string, typ byte) ent {
	return ent{hdr: tar.Header{Typeflag: typ, Name: name, Mode: 0o666, Devmajor: 1, Devminor: 3}}
}

func mkTar(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("tar header %s: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// arena is a directory holding the extraction target "root" and an
// "outside" directory with a secret: nothing may change outside root.
func arena(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	t.Cleanup(func() { removeTree(base) }) // before TempDir's: images have 0555 directories
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// outsideUntouched fails when anything but the secret is in outside, the
// secret changed, or anything beside root and outside appeared in base.
func outsideUntouched(t *testing.T, root, outside string) {
	t.Helper()
	names, _ := os.ReadDir(outside)
	if len(names) != 1 || names[0].Name() != "secret" {
		var got []string
		for _, n := range names {
			got = append(got, n.Name())
		}
		t.Errorf("outside now holds %v", got)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "host" {
		t.Errorf("outside secret changed: %q, %v", b, err)
	}
	base, _ := os.ReadDir(filepath.Dir(root))
	if len(base) != 2 {
		t.Errorf("%d entries next to the root, want 2", len(base))
	}
}

func TestExtractHostile(t *testing.T) {
	hostName := "triage-sandbox-rootfs-test-" + time.Now().Format("150405.000000000")
	cases := []struct {
		name    string
		ents    func(outside string) []ent
		wantErr string // "" means it must succeed
		check   func(t *testing.T, root string)
	}{
		{name: "dotdot", ents: func(string) []ent { return []ent{file("../secret", "pwned", 0o644)} }, wantErr: "'..'"},
		{name: "dotdot inside", ents: func(string) []ent { return []ent{file("a/../../secret", "pwned", 0o644)} }, wantErr: "'..'"},
		{name: "absolute is relative", ents: func(string) []ent { return []ent{file("/etc/"+hostName, "x", 0o644)} },
			check: func(t *testing.T, root string) {
				if _, err := os.Stat(filepath.Join(root, "etc", hostName)); err != nil {
					t.Error(err)
				}
				if _, err := os.Lstat("/etc/" + hostName); err == nil {
					t.Error("wrote to the host's /etc")
				}
			}},
		{name: "file through absolute symlink", ents: func(o string) []ent {
			return []ent{symlink("evil", o), file("evil/pwned", "x", 0o644)}
		}, wantErr: "symlink"},
		{name: "file through relative symlink", ents: func(string) []ent {
			return []ent{symlink("evil", "../outside"), file("evil/pwned", "x", 0o644)}
		}, wantErr: "symlink"},
		{name: "dir through symlink", ents: func(o string) []ent {
			return []ent{symlink("evil", o), dir("evil/sub/", 0o755)}
		}, wantErr: "symlink"},
		{name: "symlink through deep symlink", ents: func(o string) []ent {
			return []ent{dir("a/", 0o755), symlink("a/b", o), symlink("a/b/c", "/")}
		}, wantErr: "symlink"},
		{name: "hardlink dotdot", ents: func(string) []ent { return []ent{hardlink("l", "../outside/secret")} }, wantErr: "'..'"},
		{name: "hardlink absolute outside", ents: func(o string) []ent {
			return []ent{hardlink("l", filepath.Join(o, "secret"))}
		}, wantErr: "no such file"},
		{name: "hardlink through symlink", ents: func(o string) []ent {
			return []ent{symlink("d", o), hardlink("l", "d/secret")}
		}, wantErr: "symlink"},
		{name: "hardlink to symlink", ents: func(o string) []ent {
			return []ent{symlink("s", filepath.Join(o, "secret")), hardlink("l", "s")}
		}, wantErr: "not a regular file"},
		{name: "hardlink to directory", ents: func(string) []ent { return []ent{dir("d/", 0o755), hardlink("l", "d")} }, wantErr: "not a regular file"},
		{name: "file replaces symlink, never writes through it", ents: func(o string) []ent {
			return []ent{symlink("s", filepath.Join(o, "secret")), file("s", "pwned", 0o644)}
		}, check: func(t *testing.T, root string) {
			if st, err := os.Lstat(filepath.Join(root, "s")); err != nil || !st.Mode().IsRegular() {
				t.Errorf("s: %v %v", st, err)
			}
		}},
		{name: "dir replaces symlink", ents: func(o string) []ent {
			return []ent{symlink("d", o), dir("d/", 0o755), file("d/pwned", "x", 0o644)}
		}, check: func(t *testing.T, root string) {
			if _, err := os.Stat(filepath.Join(root, "d", "pwned")); err != nil {
				t.Error(err)
			}
		}},
		{name: "devices and fifos skipped", ents: func(string) []ent {
			return []ent{dir("dev/", 0o755), special("dev/null", tar.TypeChar), special("dev/sda", tar.TypeBlock), special("dev/fifo", tar.TypeFifo)}
		}, check: func(t *testing.T, root string) {
			names, _ := os.ReadDir(filepath.Join(root, "dev"))
			if len(names) != 0 {
				t.Errorf("dev holds %d entries", len(names))
			}
		}},
		{name: "whiteouts ignored in an export", ents: func(string) []ent {
			return []ent{file("keep", "x", 0o644), file(".wh.keep", "", 0o644), file(".wh..wh..opq", "", 0o644)}
		}, check: func(t *testing.T, root string) {
			names, _ := os.ReadDir(root)
			if len(names) != 1 || names[0].Name() != "keep" {
				t.Errorf("root holds %v", names)
			}
		}},
		{name: "truncated", ents: nil, wantErr: "unexpected EOF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := arena(t)
			var data []byte
			if tc.ents == nil {
				data = mkTar(t, file("big", strings.Repeat("x", 4096), 0o644))[:1024]
			} else {
				data = mkTar(t, tc.ents(outside)...)
			}
			_, err := extractTar(context.Background(), bytes.NewReader(data), root)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
			}
			outsideUntouched(t, root, outside)
			if tc.check != nil {
				tc.check(t, root)
			}
		})
	}
}

func TestExtractPreservesAttributes(t *testing.T) {
	root, outside := arena(t)
	setuid := file("usr/bin/tool", "#!/bin/sh\n", 0o4755)
	setuid.hdr.Uid, setuid.hdr.Gid = 1234, 5678
	ro := dir("usr/share/ro/", 0o555)
	ro.hdr.Uid, ro.hdr.Gid = 42, 43
	top := dir("./", 0o751)
	data := mkTar(t,
		top,
		dir("usr/", 0o755),
		dir("usr/bin/", 0o755),
		setuid,
		hardlink("usr/bin/tool2", "/usr/bin/tool"),
		symlink("bin", "usr/bin"),
		symlink("abs", "/etc/shadow"),
		ro,
		file("usr/share/ro/readme", "hi", 0o444),
		file("implicit/parent/f", "x", 0o600),
		file("replaced", "first", 0o644),
		file("replaced", "second", 0o640),
		special("dev/console", tar.TypeChar),
	)
	stats, err := extractTar(context.Background(), bytes.NewReader(data), root)
	if err != nil {
		t.Fatal(err)
	}
	outsideUntouched(t, root, outside)
	want := Stats{Files: 5, Dirs: 3, Symlinks: 2, Hardlinks: 1, Skipped: 1}
	if stats != want {
		t.Errorf("stats %+v, want %+v", stats, want)
	}
	asRoot := os.Geteuid() == 0
	check := func(rel string, mode os.FileMode, mtime int64, uid, gid int) {
		t.Helper()
		st, err := os.Lstat(filepath.Join(root, rel))
		if err != nil {
			t.Error(err)
			return
		}
		if st.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", rel, st.Mode(), mode)
		}
		if mtime != 0 && st.ModTime().Unix() != mtime {
			t.Errorf("%s: mtime %v, want %v", rel, st.ModTime().Unix(), mtime)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if asRoot && (int(sys.Uid) != uid || int(sys.Gid) != gid) {
			t.Errorf("%s: owner %d:%d, want %d:%d", rel, sys.Uid, sys.Gid, uid, gid)
		}
	}
	check(".", os.ModeDir|0o751, 1_500_000_000, 0, 0)
	check("usr", os.ModeDir|0o755, 1_500_000_000, 0, 0)
	check("usr/bin/tool", os.ModeSetuid|0o755, 1_600_000_000, 1234, 5678)
	check("usr/share/ro", os.ModeDir|0o555, 1_500_000_000, 42, 43)
	check("usr/share/ro/readme", 0o444, 1_600_000_000, 0, 0)
	check("bin", os.ModeSymlink|0o777, 1_400_000_000, 0, 0)
	check("replaced", 0o640, 1_600_000_000, 0, 0)
	check("implicit/parent", os.ModeDir|0o755, 0, os.Geteuid(), os.Getegid())
	for link, target := range map[string]string{"bin": "usr/bin", "abs": "/etc/shadow"} {
		if got, _ := os.Readlink(filepath.Join(root, link)); got != target {
			t.Errorf("%s -> %q, want %q (verbatim)", link, got, target)
		}
	}
	a, _ := os.Stat(filepath.Join(root, "usr/bin/tool"))
	b, _ := os.Stat(filepath.Join(root, "usr/bin/tool2"))
	if !os.SameFile(a, b) {
		t.Error("tool2 is not a hard link of tool")
	}
	if got, _ := os.ReadFile(filepath.Join(root, "replaced")); string(got) != "second" {
		t.Errorf("replaced holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "dev", "console")); err == nil {
		t.Error("a device entry was created")
	}
}

func TestExtractCancelled(t *testing.T) {
	root, _ := arena(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := extractTar(ctx, bytes.NewReader(mkTar(t, file("a", "x", 0o644))), root); err == nil {
		t.Fatal("extraction ignored a cancelled context")
	}
}

func TestSplitName(t *testing.T) {
	for in, want := range map[string]string{
		"a/b": "a/b", "/a/b/": "a/b", "./a//./b": "a/b", "": "", "/": "", "./": "",
	} {
		got, err := splitName(in)
		if err != nil || strings.Join(got, "/") != want {
			t.Errorf("splitName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"..", "../a", "a/..", "a/../b", "/../a"} {
		if _, err := splitName(bad); err == nil {
			t.Errorf("splitName(%q) accepted", bad)
		}
	}
}

// TestExportLeavesDockerEnvOut: a container export's /.dockerenv (Docker's
// marker) is not part of the root; a file of that name deeper down is.
func TestExportLeavesDockerEnvOut(t *testing.T) {
	root, outside := arena(t)
	raw := mkTar(t, file(".dockerenv", "", 0o755), dir("etc", 0o755), file("etc/.dockerenv", "x", 0o644))
	if _, err := extractTar(context.Background(), bytes.NewReader(raw), root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, ".dockerenv")); err == nil {
		t.Error("/.dockerenv is in the root")
	}
	if _, err := os.Lstat(filepath.Join(root, "etc", ".dockerenv")); err != nil {
		t.Errorf("etc/.dockerenv: %v", err)
	}
	outsideUntouched(t, root, outside)
}
