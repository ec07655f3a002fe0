//go:build unix

package stage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzApply feeds Apply export streams a hostile sandbox could write. It
// must never panic, never touch anything outside the staged paths (a
// sentinel beside them and a skipped credential path keep their bytes,
// nothing new appears beside them), never create a FIFO, socket or device,
// never leave a set-id bit, and never write more than its bound.
func FuzzApply(f *testing.F) {
	for _, seed := range applySeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(applyOnce)
}

// applyOnce is one fuzz iteration.
func applyOnce(t *testing.T, stream []byte) {
	{
		ws := t.TempDir()
		repros := filepath.Join(ws, "repros")
		notes := filepath.Join(ws, "NOTES.md")
		secret := filepath.Join(repros, ".ssh")
		mustWrite(t, filepath.Join(repros, "r.py"), "print(1)\n")
		mustWrite(t, notes, "# notes\n")
		mustWrite(t, filepath.Join(secret, "id"), "canary-key\n")
		mustWrite(t, filepath.Join(ws, "sentinel"), "host\n")
		spec := Spec{Paths: []Path{{repros, KindDir}, {notes, KindFile}}, Skip: []string{secret},
			UID: os.Getuid(), GID: os.Getgid(), MaxBytes: 1 << 20, MaxEntries: 64}
		m, err := Pack(context.Background(), new(bytes.Buffer), spec)
		if err != nil {
			t.Fatal(err)
		}
		before := treeSum(t, ws, repros, notes)
		secretBefore := treeSum(t, secret, "", "")
		_, _, _ = Apply(context.Background(), bytes.NewReader(stream), m, spec)
		if got := treeSum(t, ws, repros, notes); got != before {
			t.Fatalf("Apply changed the host outside the staged paths")
		}
		if got := treeSum(t, secret, "", ""); got != secretBefore {
			t.Fatalf("Apply changed the skipped credential path")
		}
		var total int64
		_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if info.Mode()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
				t.Fatalf("Apply created a special file: %s (%v)", p, info.Mode())
			}
			if info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Fatalf("Apply left a set-id bit: %s (%v)", p, info.Mode())
			}
			if info.Mode().IsRegular() {
				total += info.Size()
			}
			return nil
		})
		if total > spec.MaxBytes+64<<10 {
			t.Fatalf("Apply wrote %d bytes, over the %d-byte bound", total, spec.MaxBytes)
		}
	}
}

// treeSum hashes every entry under root (names, types, contents, link
// targets) except below the staged paths a and b.
func treeSum(t *testing.T, root, a, b string) [32]byte {
	t.Helper()
	h := sha256.New()
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if (a != "" && p == a) || (b != "" && p == b) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, _ := os.Lstat(p)
		h.Write([]byte(p + "\x00" + info.Mode().String() + "\x00"))
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			h.Write([]byte(l))
		case info.Mode().IsRegular():
			c, _ := os.ReadFile(p)
			h.Write(c)
		}
		return nil
	})
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// applySeeds are a real export of a changed sandbox plus hand-made hostile
// streams: escapes by name and through symlinks, special files, set-id
// bits, a cut stream, an over-bound marker.
func applySeeds(f *testing.F) [][]byte { return applySeedsT(f) }

func applySeedsT(f testing.TB) [][]byte {
	ws := f.TempDir()
	repros := filepath.Join(ws, "repros")
	notes := filepath.Join(ws, "NOTES.md")
	mustWrite(f, filepath.Join(repros, "r.py"), "print(2)\n")
	mustWrite(f, filepath.Join(repros, "new.txt"), "new\n")
	mustWrite(f, notes, "# notes, edited\n")
	_ = os.Symlink("r.py", filepath.Join(repros, "link"))
	var real bytes.Buffer
	if err := Export(&real, []Path{{repros, KindDir}, {notes, KindFile}}); err != nil {
		f.Fatal(err)
	}
	seeds := [][]byte{real.Bytes(), real.Bytes()[:real.Len()/2], nil}
	// The seeds name the fuzz run's own paths only by their shape: the
	// staged directory is "repros" under some temporary root, so a name
	// with the real prefix is rewritten by the mutator rarely; escapes by
	// "..", absolute names and symlinks need no prefix at all.
	prefix := strings.TrimPrefix(repros, "/")
	for _, hdrs := range [][]tar.Header{
		{{Name: prefix + "/../sentinel", Typeflag: tar.TypeReg, Size: 4, Mode: 0o644}},
		{{Name: "/etc/passwd", Typeflag: tar.TypeReg, Size: 4, Mode: 0o644}},
		{{Name: prefix + "/out", Typeflag: tar.TypeSymlink, Linkname: "../", Mode: 0o777},
			{Name: prefix + "/out/sentinel", Typeflag: tar.TypeReg, Size: 4, Mode: 0o644}},
		{{Name: prefix + "/fifo", Typeflag: tar.TypeFifo, Mode: 0o644}},
		{{Name: prefix + "/dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666}},
		{{Name: prefix + "/suid", Typeflag: tar.TypeReg, Size: 4, Mode: 0o4755}},
		{{Name: prefix + "/.ssh/id", Typeflag: tar.TypeReg, Size: 4, Mode: 0o600}},
		{{Name: prefix + "/big", Typeflag: tar.TypeReg, Size: 2 << 20, Mode: 0o644}},
	} {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, h := range hdrs {
			_ = tw.WriteHeader(&h)
			if h.Size > 0 && h.Size < 1<<10 {
				_, _ = tw.Write([]byte(strings.Repeat("x", int(h.Size))))
			}
		}
		_ = tw.Close()
		seeds = append(seeds, b.Bytes())
	}
	return seeds
}
