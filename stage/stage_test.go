//go:build unix

package stage

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// roundTrip plays one run: pack the host paths, give the sandbox a fresh
// copy at the same paths (the host's are moved aside meanwhile), let
// sandbox change it, export, put the host's back, let host change them,
// and apply.
func roundTrip(t *testing.T, spec Spec, sandbox, host func()) (Report, Manifest) {
	t.Helper()
	ctx := context.Background()
	var in bytes.Buffer
	m, err := Pack(ctx, &in, spec)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	var dirs []string
	for _, p := range spec.Paths {
		if p.Kind == KindDir {
			dirs = append(dirs, p.Path)
		}
	}
	var aside []string
	for _, d := range dirs {
		if err := os.Rename(d, d+".host"); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		aside = append(aside, d)
	}
	files := map[string][]byte{}
	for _, p := range spec.Paths {
		if p.Kind == KindFile {
			b, err := os.ReadFile(p.Path)
			if err == nil {
				files[p.Path] = b
				os.Remove(p.Path)
			}
		}
	}
	if err := Unpack(&in, spec.Paths); err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	sandbox()
	var out bytes.Buffer
	if err := Export(&out, spec.Paths); err != nil {
		t.Fatalf("Export: %v", err)
	}
	for _, d := range aside {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(d+".host", d); err != nil {
			t.Fatal(err)
		}
	}
	for p, b := range files {
		os.Remove(p)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Restore the packed mtimes of the files put back.
	for name, st := range m {
		if st.Type == tar.TypeReg {
			if _, ok := files["/"+name]; ok {
				os.Chtimes("/"+name, st.MTime, st.MTime)
			}
		}
	}
	if host != nil {
		host()
	}
	now, rep, err := Apply(ctx, &out, m, spec)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return rep, now
}

func write(t *testing.T, path, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func hasChange(rep Report, path, action string) bool {
	for _, c := range rep.Changes {
		if c.Path == path && c.Action == action {
			return true
		}
	}
	return false
}

func TestRoundTrip(t *testing.T) {
	root := t.TempDir()
	repros := filepath.Join(root, "repros")
	notes := filepath.Join(root, "NOTES.md")
	secret := filepath.Join(repros, ".env")
	write(t, filepath.Join(repros, "keep.py"), "keep", 0o644)
	write(t, filepath.Join(repros, "edit.py"), "old", 0o644)
	write(t, filepath.Join(repros, "gone.py"), "bye", 0o644)
	write(t, filepath.Join(repros, "sub", "a.txt"), "a", 0o644)
	write(t, secret, "TOKEN=1", 0o600)
	write(t, notes, "notes v1\n", 0o644)
	outside := filepath.Join(root, "outside.txt")
	write(t, outside, "untouched", 0o644)
	spec := Spec{
		Paths: []Path{{repros, KindDir}, {notes, KindFile}},
		Skip:  []string{secret}, UID: os.Getuid(), GID: os.Getgid(),
	}
	rep, _ := roundTrip(t, spec, func() {
		if _, err := os.Stat(secret); err == nil {
			t.Error("an unreadable path was copied into the sandbox")
		}
		write(t, filepath.Join(repros, "edit.py"), "new content", 0o644)
		os.Remove(filepath.Join(repros, "gone.py"))
		write(t, filepath.Join(repros, "new", "deep", "b.txt"), "b", 0o644)
		write(t, filepath.Join(repros, "suid"), "x", 0o755)
		os.Chmod(filepath.Join(repros, "suid"), os.ModeSetuid|0o755)
		os.Symlink("/etc/passwd", filepath.Join(repros, "link"))
		syscall.Mkfifo(filepath.Join(repros, "fifo"), 0o644)
		write(t, secret, "TOKEN=planted", 0o644)
		// A rename-based edit of the writable file (sed -i).
		write(t, notes+".tmp", "notes v2\n", 0o644)
		os.Rename(notes+".tmp", notes)
	}, nil)
	checks := map[string]string{
		"keep.py": "keep", "edit.py": "new content", "new/deep/b.txt": "b", "sub/a.txt": "a", ".env": "TOKEN=1",
	}
	for rel, want := range checks {
		if got := read(t, filepath.Join(repros, rel)); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(repros, "gone.py")); !os.IsNotExist(err) {
		t.Errorf("gone.py was not deleted: %v", err)
	}
	if got := read(t, notes); got != "notes v2\n" {
		t.Errorf("NOTES.md = %q", got)
	}
	// edit.py, new, new/deep, new/deep/b.txt, suid, link, NOTES.md: what
	// did not change is not rewritten.
	if rep.Written != 7 || rep.Deleted != 1 {
		t.Errorf("written %d, deleted %d; want 7 and 1", rep.Written, rep.Deleted)
	}
	if got := read(t, outside); got != "untouched" {
		t.Errorf("outside = %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(repros, "suid")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("suid file: %v %v", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(repros, "link")); err != nil || target != "/etc/passwd" {
		t.Errorf("symlink not kept as a symlink: %q %v", target, err)
	}
	if _, err := os.Lstat(filepath.Join(repros, "fifo")); !os.IsNotExist(err) {
		t.Errorf("a FIFO reached the host: %v", err)
	}
	for _, want := range []struct{ path, action string }{
		{filepath.Join(repros, "fifo"), "dropped"}, {secret, "dropped"}, {filepath.Join(repros, "suid"), "dropped"},
	} {
		if !hasChange(rep, want.path, want.action) {
			t.Errorf("report lacks %s %s: %+v", want.action, want.path, rep.Changes)
		}
	}
}

func TestHostWinsConflicts(t *testing.T) {
	root := t.TempDir()
	repros := filepath.Join(root, "repros")
	write(t, filepath.Join(repros, "both.py"), "v1", 0o644)
	write(t, filepath.Join(repros, "del.py"), "v1", 0o644)
	spec := Spec{Paths: []Path{{repros, KindDir}}, UID: os.Getuid(), GID: os.Getgid()}
	rep, _ := roundTrip(t, spec, func() {
		write(t, filepath.Join(repros, "both.py"), "sandbox", 0o644)
		os.Remove(filepath.Join(repros, "del.py"))
		write(t, filepath.Join(repros, "new.py"), "sandbox", 0o644)
	}, func() {
		later := time.Now().Add(time.Hour)
		write(t, filepath.Join(repros, "both.py"), "host!", 0o644)
		write(t, filepath.Join(repros, "del.py"), "host!", 0o644)
		os.Chtimes(filepath.Join(repros, "del.py"), later, later)
		write(t, filepath.Join(repros, "new.py"), "host", 0o644)
	})
	for _, name := range []string{"both.py", "del.py"} {
		if got := read(t, filepath.Join(repros, name)); got != "host!" {
			t.Errorf("%s = %q, the host's version must stay", name, got)
		}
		if !hasChange(rep, filepath.Join(repros, name), "conflict") {
			t.Errorf("no conflict reported for %s: %+v", name, rep.Changes)
		}
	}
	if got := read(t, filepath.Join(repros, "new.py")); got != "host" {
		t.Errorf("new.py = %q", got)
	}
	// Neither edit is lost: the sandbox's version is kept beside the host's.
	for _, name := range []string{"both.py", "new.py"} {
		c := changeOf(rep, filepath.Join(repros, name))
		if c.KeptAs == "" || filepath.Dir(c.KeptAs) != repros {
			t.Errorf("%s: the sandbox's version was not kept beside it: %+v", name, c)
			continue
		}
		if got := read(t, c.KeptAs); got != "sandbox" {
			t.Errorf("%s kept as %s = %q, want the sandbox's version", name, c.KeptAs, got)
		}
		if fi, err := os.Lstat(c.KeptAs); err != nil || fi.Mode().Perm()&0o111 != 0 {
			t.Errorf("%s: kept copy %v %v must be a plain, non-executable file", name, fi, err)
		}
	}
}

// A writable file (NOTES.md) the host edited while the agent did: the
// host's stays, the agent's is kept beside it.
func TestWritableFileConflictKeepsBoth(t *testing.T) {
	root := t.TempDir()
	notes := filepath.Join(root, "NOTES.md")
	write(t, notes, "v1", 0o644)
	spec := Spec{Paths: []Path{{notes, KindFile}}, UID: os.Getuid(), GID: os.Getgid()}
	rep, _ := roundTrip(t, spec, func() {
		write(t, notes, "agent", 0o644)
	}, func() {
		write(t, notes, "host edit", 0o644)
	})
	if got := read(t, notes); got != "host edit" {
		t.Fatalf("NOTES.md = %q, want the host's edit", got)
	}
	c := changeOf(rep, notes)
	if c.Action != "conflict" || c.KeptAs == "" || read(t, c.KeptAs) != "agent" {
		t.Fatalf("the agent's edit was not kept: %+v", c)
	}
}

func changeOf(rep Report, path string) Change {
	for _, c := range rep.Changes {
		if c.Path == path {
			return c
		}
	}
	return Change{}
}

func TestWritableFileNeverBecomesALink(t *testing.T) {
	root := t.TempDir()
	notes := filepath.Join(root, "NOTES.md")
	write(t, notes, "mine", 0o644)
	spec := Spec{Paths: []Path{{notes, KindFile}}, UID: os.Getuid(), GID: os.Getgid()}
	rep, _ := roundTrip(t, spec, func() {
		os.Remove(notes)
		os.Symlink("/etc/shadow", notes)
	}, nil)
	fi, err := os.Lstat(notes)
	if err != nil || !fi.Mode().IsRegular() || read(t, notes) != "mine" {
		t.Fatalf("NOTES.md changed: %v %v", fi, err)
	}
	if !hasChange(rep, notes, "dropped") {
		t.Errorf("not reported: %+v", rep.Changes)
	}
}

func TestUnreadableOnTheHostStaysOut(t *testing.T) {
	// Root, not testenv.RequireRoot: this package's tests stay free of the
	// Docker client, so its fuzz targets run at full speed.
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root (and not -short): to own a file the sandbox identity cannot read")
	}
	root := t.TempDir()
	repros := filepath.Join(root, "repros")
	write(t, filepath.Join(repros, "private"), "root only", 0o600)
	os.MkdirAll(filepath.Join(repros, "closed"), 0o700)
	write(t, filepath.Join(repros, "open.py"), "ok", 0o644)
	spec := Spec{Paths: []Path{{repros, KindDir}}, UID: 65534, GID: 65534}
	rep, _ := roundTrip(t, spec, func() {
		if _, err := os.Stat(filepath.Join(repros, "private")); err == nil {
			t.Error("a file the sandbox identity cannot read was copied in")
		}
		write(t, filepath.Join(repros, "private"), "planted", 0o644)
		write(t, filepath.Join(repros, "closed", "x"), "planted", 0o644)
	}, nil)
	if got := read(t, filepath.Join(repros, "private")); got != "root only" {
		t.Errorf("private = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(repros, "closed", "x")); !os.IsNotExist(err) {
		t.Errorf("written into a directory the sandbox cannot read: %v", err)
	}
	if got := read(t, filepath.Join(repros, "open.py")); got != "ok" {
		t.Errorf("open.py = %q", got)
	}
	if !hasChange(rep, filepath.Join(repros, "private"), "dropped") {
		t.Errorf("not reported: %+v", rep.Changes)
	}
}

// TestHostileExport feeds Apply streams no honest Export makes.
func TestHostileExport(t *testing.T) {
	root := t.TempDir()
	repros := filepath.Join(root, "repros")
	os.MkdirAll(repros, 0o755)
	elsewhere := filepath.Join(root, "elsewhere")
	os.MkdirAll(elsewhere, 0o755)
	// A symlink planted on the host inside the staged dir: Apply must not
	// write through it.
	os.Symlink(elsewhere, filepath.Join(repros, "link"))
	spec := Spec{Paths: []Path{{repros, KindDir}}, UID: os.Getuid(), GID: os.Getgid(), MaxBytes: 1 << 20}
	rel := strings.TrimPrefix(repros, "/")
	cases := []struct {
		name    string
		entries []*tar.Header
		wantErr bool
	}{
		{"dotdot", []*tar.Header{{Name: rel + "/../x", Typeflag: tar.TypeReg}}, true},
		{"absolute", []*tar.Header{{Name: "/" + rel + "/x", Typeflag: tar.TypeReg}}, true},
		{"outside", []*tar.Header{{Name: strings.TrimPrefix(elsewhere, "/") + "/x", Typeflag: tar.TypeReg}}, true},
		{"the root itself", []*tar.Header{{Name: rel, Typeflag: tar.TypeSymlink, Linkname: "/"}}, true},
		{"through a host symlink", []*tar.Header{{Name: rel + "/link/x", Typeflag: tar.TypeReg, Size: 1}}, false},
		{"too big", []*tar.Header{{Name: rel + "/big", Typeflag: tar.TypeReg, Size: 2 << 20}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, h := range c.entries {
				h.Mode = 0o644
				if err := tw.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
				tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
			}
			writeEnd(tw)
			tw.Close()
			_, _, err := Apply(context.Background(), &buf, Manifest{}, spec)
			if (err != nil) != c.wantErr {
				t.Errorf("err = %v, want error %v", err, c.wantErr)
			}
			if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
				t.Errorf("something was written outside: %v", entries)
			}
		})
	}
}

func TestSkeletonWritesAreNamed(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	notes := filepath.Join(ws, "NOTES.md")
	write(t, notes, "v1", 0o644)
	paths := []Path{{notes, KindFile}, {ws, KindSkeleton}}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(ws, "/") + "/junk.txt", Typeflag: typeDiscarded})
	writeEnd(tw)
	tw.Close()
	spec := Spec{Paths: paths, UID: os.Getuid(), GID: os.Getgid()}
	m, err := Pack(context.Background(), io.Discard, Spec{Paths: paths[:1], UID: os.Getuid(), GID: os.Getgid()})
	if err != nil {
		t.Fatal(err)
	}
	_, rep, err := Apply(context.Background(), &buf, m, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Discarded) != 1 || rep.Discarded[0] != filepath.Join(ws, "junk.txt") {
		t.Errorf("discarded = %v", rep.Discarded)
	}
	if read(t, notes) != "v1" {
		t.Error("NOTES.md changed")
	}
	// Anything but a name in a skeleton is refused.
	buf.Reset()
	tw = tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(ws, "/") + "/evil", Typeflag: tar.TypeReg, Mode: 0o644})
	writeEnd(tw)
	tw.Close()
	if _, _, err := Apply(context.Background(), &buf, m, spec); err == nil {
		t.Error("a file written into a skeleton was accepted")
	}
	if _, err := os.Lstat(filepath.Join(ws, "evil")); !os.IsNotExist(err) {
		t.Error("a file written into a skeleton reached the host")
	}
}

func writeEnd(tw *tar.Writer) {
	tw.WriteHeader(&tar.Header{Name: endName, Typeflag: typeEnd, Format: tar.FormatPAX})
}

// An export cut short (the exporter died, its pipe closed early: an empty
// stream, or one cut between entries) deletes nothing on the host.
func TestCutExportDeletesNothing(t *testing.T) {
	root := t.TempDir()
	repros := filepath.Join(root, "repros")
	write(t, filepath.Join(repros, "a.py"), "a", 0o644)
	write(t, filepath.Join(repros, "b.py"), "b", 0o644)
	spec := Spec{Paths: []Path{{repros, KindDir}}, UID: os.Getuid(), GID: os.Getgid()}
	m, err := Pack(context.Background(), io.Discard, spec)
	if err != nil {
		t.Fatal(err)
	}
	var partial bytes.Buffer
	tw := tar.NewWriter(&partial)
	tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(filepath.Join(repros, "a.py"), "/"), Typeflag: tar.TypeReg, Mode: 0o644, Size: 1, ModTime: m[strings.TrimPrefix(filepath.Join(repros, "a.py"), "/")].MTime})
	tw.Write([]byte("a"))
	tw.Flush() // no end entry, no end-of-archive blocks
	for name, stream := range map[string][]byte{"empty": nil, "cut between entries": partial.Bytes()} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Apply(context.Background(), bytes.NewReader(stream), m, spec); err == nil {
				t.Error("a cut export was taken as whole")
			}
			for _, f := range []string{"a.py", "b.py"} {
				if _, err := os.Stat(filepath.Join(repros, f)); err != nil {
					t.Errorf("%s was deleted: %v", f, err)
				}
			}
		})
	}
}

// A sandbox whose filesystem ignores its inode bound (gVisor's tmpfs)
// still cannot make the host create more than the bound under one path,
// while another path keeps its own bound.
func TestEntriesBoundPerPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inA     int
		inB     int
		wantErr bool
	}{
		{"at the bound in each", 5, 5, false},
		{"past it in one", 6, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
			for _, d := range []string{a, b} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			spec := Spec{Paths: []Path{{a, KindDir}, {b, KindDir}}, UID: os.Getuid(), GID: os.Getgid(), MaxEntriesPerPath: 5}
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for dir, n := range map[string]int{a: tc.inA, b: tc.inB} {
				for i := range n {
					h := &tar.Header{Name: strings.TrimPrefix(dir, "/") + "/" + tc.name + string(rune('0'+i)), Typeflag: tar.TypeReg, Mode: 0o644}
					if err := tw.WriteHeader(h); err != nil {
						t.Fatal(err)
					}
				}
			}
			writeEnd(tw)
			tw.Close()
			_, _, err := Apply(context.Background(), &buf, Manifest{}, spec)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got, _ := os.ReadDir(a); len(got) > 5 {
				t.Errorf("%d entries landed under %s, past the bound of 5", len(got), a)
			}
		})
	}
}

// An exporter that finds a directory past the bound exports nothing, and
// the host applies nothing: no copy back refused part way.
func TestExportPastTheBoundSendsNothing(t *testing.T) {
	dir := t.TempDir()
	for i := range 6 {
		write(t, filepath.Join(dir, "f"+string(rune('0'+i))), "x", 0o644)
	}
	var buf bytes.Buffer
	if err := ExportBounded(&buf, []Path{{dir, KindDir}}, 5); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("f0")) {
		t.Errorf("the export past the bound carries entries")
	}
	_, rep, err := Apply(context.Background(), &buf, Manifest{},
		Spec{Paths: []Path{{dir, KindDir}}, UID: os.Getuid(), GID: os.Getgid(), MaxEntriesPerPath: 5})
	if err == nil || !strings.Contains(err.Error(), "past its bound") {
		t.Fatalf("Apply: %v, want the bound named", err)
	}
	if rep.Written != 0 {
		t.Errorf("%d entries were written", rep.Written)
	}
	buf.Reset()
	if err := ExportBounded(&buf, []Path{{dir, KindDir}}, 6); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte(overName)) {
		t.Errorf("a directory at its bound was reported past it")
	}
}

// TestConflictReportedOnce: in a session the sandbox's copy outlives one
// command, so after a conflict every later export still holds the
// sandbox's version. It is kept beside the host's once; the next command
// that leaves it alone reports nothing (it wrote another
// NOTES.md.from-sandbox-* each time), and a new edit of the sandbox's is
// again a conflict, kept beside: the host's version is never overwritten
// by a sandbox that never saw it.
func TestConflictReportedOnce(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	notes := filepath.Join(root, "NOTES.md")
	write(t, notes, "v1", 0o644)
	spec := Spec{Paths: []Path{{notes, KindFile}}, UID: os.Getuid(), GID: os.Getgid()}
	m, err := Pack(ctx, io.Discard, spec)
	if err != nil {
		t.Fatal(err)
	}
	// export is what the sandbox exports with NOTES.md holding body; the
	// host's file is put back as it was afterwards.
	export := func(body string) []byte {
		t.Helper()
		host, _ := os.ReadFile(notes)
		fi, _ := os.Stat(notes)
		write(t, notes, body, 0o644)
		var out bytes.Buffer
		if err := Export(&out, spec.Paths); err != nil {
			t.Fatal(err)
		}
		write(t, notes, string(host), 0o644)
		os.Chtimes(notes, fi.ModTime(), fi.ModTime())
		return out.Bytes()
	}
	apply := func(exp []byte) Report {
		t.Helper()
		now, rep, err := Apply(ctx, bytes.NewReader(exp), m, spec)
		if err != nil {
			t.Fatal(err)
		}
		m = now
		return rep
	}
	agent := export("agent")
	write(t, notes, "host edit", 0o644)
	if c := changeOf(apply(agent), notes); c.Action != "conflict" || read(t, c.KeptAs) != "agent" {
		t.Fatalf("first copy-back: %+v", c)
	}
	for i := 0; i < 2; i++ {
		if rep := apply(agent); len(rep.Changes) != 0 || rep.Written != 0 {
			t.Fatalf("the same sandbox version again (command %d): %+v", i+2, rep)
		}
	}
	kept, _ := filepath.Glob(notes + ".from-sandbox-*")
	if len(kept) != 1 {
		t.Errorf("kept files %v, want one", kept)
	}
	c := changeOf(apply(export("agent, again")), notes)
	if c.Action != "conflict" || read(t, c.KeptAs) != "agent, again" || read(t, notes) != "host edit" {
		t.Fatalf("a new edit after the conflict: %+v, NOTES.md %q", c, read(t, notes))
	}
}

// TestSymlinkInAWritablePath: a symlink the host already has in a
// writable path is no conflict when nothing touched it, and the sandbox's
// change to it is applied; a symlink's state is its target (its size,
// mode and mtime say nothing a target does not).
func TestSymlinkInAWritablePath(t *testing.T) {
	for _, c := range []struct {
		name          string
		sandbox, host func(link string)
		want          string // the link's target after the copy-back; "" gone
		action        string // the change reported for it; "" none
	}{
		{"untouched", func(string) {}, nil, "a.txt", ""},
		{"retargeted in the sandbox", func(l string) { os.Remove(l); os.Symlink("b.txt", l) }, nil, "b.txt", ""},
		{"deleted in the sandbox", func(l string) { os.Remove(l) }, nil, "", ""},
		{"retargeted on the host", func(l string) { os.Remove(l); os.Symlink("b.txt", l) },
			func(l string) { os.Remove(l); os.Symlink("c.txt", l) }, "c.txt", "conflict"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repros := filepath.Join(t.TempDir(), "repros")
			link := filepath.Join(repros, "current")
			write(t, filepath.Join(repros, "a.txt"), "a", 0o644)
			if err := os.Symlink("a.txt", link); err != nil {
				t.Fatal(err)
			}
			// The link is older than the copy: an unpack cannot keep a
			// symlink's mtime, so a stale one must not read as a change.
			old := time.Now().Add(-time.Hour)
			if err := unix.Lutimes(link, []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}); err != nil {
				t.Fatal(err)
			}
			spec := Spec{Paths: []Path{{repros, KindDir}}, UID: os.Getuid(), GID: os.Getgid()}
			var host func()
			if c.host != nil {
				host = func() { c.host(link) }
			}
			rep, _ := roundTrip(t, spec, func() { c.sandbox(link) }, host)
			got, err := os.Readlink(link)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("the link points at %q, want %q", got, c.want)
			}
			if ch := changeOf(rep, link); ch.Action != c.action {
				t.Errorf("reported %+v for the link, want action %q (all: %+v)", ch, c.action, rep.Changes)
			}
		})
	}
}

// TestSymlinkNoConflictInASession: a session's later copy-backs compare
// against the manifest the first one returned; a symlink in it stays quiet.
func TestSymlinkNoConflictInASession(t *testing.T) {
	ctx := context.Background()
	repros := filepath.Join(t.TempDir(), "repros")
	link := filepath.Join(repros, "current")
	write(t, filepath.Join(repros, "a.txt"), "a", 0o644)
	if err := os.Symlink("a.txt", link); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Paths: []Path{{repros, KindDir}}, UID: os.Getuid(), GID: os.Getgid()}
	m, err := Pack(ctx, io.Discard, spec)
	if err != nil {
		t.Fatal(err)
	}
	// The sandbox retargets it, then exports the same tree twice. Its
	// export is taken on the host tree and the host's link restored.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	os.Symlink("b.txt", link)
	var exp bytes.Buffer
	if err := Export(&exp, spec.Paths); err != nil {
		t.Fatal(err)
	}
	os.Remove(link)
	os.Symlink("a.txt", link)
	for i := 0; i < 3; i++ {
		now, rep, err := Apply(ctx, bytes.NewReader(exp.Bytes()), m, spec)
		if err != nil {
			t.Fatal(err)
		}
		m = now
		if len(rep.Changes) != 0 {
			t.Fatalf("copy-back %d: %+v", i+1, rep.Changes)
		}
		if got, _ := os.Readlink(link); got != "b.txt" {
			t.Fatalf("copy-back %d: the link points at %q, want b.txt", i+1, got)
		}
	}
}

// TestConflictCopyIsPrivate: the sandbox chooses its file's mode, not the
// kept copy's: never group or other writable, never executable, never
// wider than the host's version.
func TestConflictCopyIsPrivate(t *testing.T) {
	for _, c := range []struct {
		name          string
		host, sandbox os.FileMode
		want          os.FileMode
	}{
		{"world-writable in the sandbox", 0o644, 0o666, 0o644},
		{"executable in the sandbox", 0o644, 0o777, 0o644},
		{"private on the host", 0o600, 0o666, 0o600},
		{"group readable", 0o640, 0o664, 0o640},
		{"narrower in the sandbox", 0o644, 0o600, 0o600},
	} {
		t.Run(c.name, func(t *testing.T) {
			repros := filepath.Join(t.TempDir(), "repros")
			f := filepath.Join(repros, "both.py")
			write(t, f, "v1", c.host)
			os.Chmod(f, c.host)
			spec := Spec{Paths: []Path{{repros, KindDir}}, UID: os.Getuid(), GID: os.Getgid()}
			rep, _ := roundTrip(t, spec, func() {
				write(t, f, "sandbox", c.sandbox)
				os.Chmod(f, c.sandbox)
			}, func() {
				write(t, f, "host!", c.host)
			})
			ch := changeOf(rep, f)
			if ch.Action != "conflict" || ch.KeptAs == "" {
				t.Fatalf("no kept copy: %+v", ch)
			}
			fi, err := os.Lstat(ch.KeptAs)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != c.want {
				t.Errorf("kept copy mode %v, want %v", got, c.want)
			}
		})
	}
}
