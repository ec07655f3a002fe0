package hostread

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestNilRecorderReads: a nil Recorder reads as os does and notes nothing.
func TestNilRecorderReads(t *testing.T) {
	var r *Recorder
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := r.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "x" {
		t.Fatalf("ReadFile: %q, %v", b, err)
	}
	if r.Reads() != nil {
		t.Error("a nil recorder has reads")
	}
}

// TestGlobIsFilepathGlob: the recorder's Glob finds what filepath.Glob
// finds, and notes each directory it listed.
func TestGlobIsFilepathGlob(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"lib/python3.11/site-packages", "lib64/python3.11", "libx/other", "worktrees/a/config.worktree", "worktrees/b/x"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, pat := range []string{"lib*/python*", "worktrees/*/config.worktree", "modules/*", "lib", "nope/*/x"} {
		r := &Recorder{}
		got, err := r.Glob(filepath.Join(dir, pat))
		want, werr := filepath.Glob(filepath.Join(dir, pat))
		if err != nil || werr != nil || !slices.Equal(got, want) {
			t.Errorf("Glob(%s) = %v, %v; filepath.Glob: %v, %v", pat, got, err, want, werr)
		}
	}
	r := &Recorder{}
	_, _ = r.Glob(filepath.Join(dir, "lib*", "python*"))
	if !slices.ContainsFunc(r.Reads(), func(x Read) bool { return x.Path == filepath.Join(dir, "lib64") && x.Kind == List }) {
		t.Errorf("the listed directory lib64 was not noted: %v", r.Reads())
	}
}

// TestEvalSymlinksNotesTheChain: every component on the way, and each
// link's target's, is noted; retargeting a link changes a noted read.
func TestEvalSymlinksNotesTheChain(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a/real", "b/real"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("a", link); err != nil {
		t.Fatal(err)
	}
	r := &Recorder{}
	got, err := r.EvalSymlinks(filepath.Join(link, "real"))
	if err != nil || got != filepath.Join(dir, "a", "real") {
		t.Fatalf("EvalSymlinks: %s, %v", got, err)
	}
	noted := map[string]bool{}
	for _, x := range r.Reads() {
		noted[x.Path] = true
	}
	for _, p := range []string{link, filepath.Join(dir, "a"), filepath.Join(dir, "a", "real")} {
		if !noted[p] {
			t.Errorf("%s not noted", p)
		}
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", link); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Reads(), func(x Read) bool { return !x.Unchanged() }) {
		t.Error("the link was retargeted and every read is unchanged")
	}
}

// TestCacheAbsentGroup: absent paths of one directory are checked through
// it while it is unchanged; an entry made in it fails the group and the
// paths are checked one by one; a directory changed after the compile
// began makes no group.
func TestCacheAbsentGroup(t *testing.T) {
	dir := t.TempDir()
	time.Sleep(60 * time.Millisecond)
	began := time.Now()
	r := &Recorder{}
	for _, n := range []string{"a", "b", "c"} {
		_, _ = r.Lstat(filepath.Join(dir, n))
	}
	c := &Cache[int]{Settle: 50 * time.Millisecond}
	if why := c.Put("k", began, r.Reads(), 1); why != "" {
		t.Fatal(why)
	}
	if e := c.entries["k"]; len(e.absent) != 1 || len(e.absent[0].members) != 3 || len(e.rest) != 0 {
		t.Fatalf("groups %+v, rest %v: want one of three", e.absent, e.rest)
	}
	if _, ok := c.Get("k", nil); !ok {
		t.Fatal("unchanged: a miss")
	}
	if err := os.WriteFile(filepath.Join(dir, "unrelated"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("k", nil); !ok {
		t.Fatal("an unrelated entry made: a miss (the group failed, each path is still absent)")
	}
	if err := os.WriteFile(filepath.Join(dir, "b"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("k", nil); ok {
		t.Fatal("b was made: a hit")
	}
	// The directory changed after the compile began: no group.
	c2 := &Cache[int]{Settle: 50 * time.Millisecond}
	if why := c2.Put("k", began, r.Reads()[:1], 1); why != "" {
		t.Fatal(why)
	}
	r2 := &Recorder{}
	_, _ = r2.Lstat(filepath.Join(dir, "x"))
	_, _ = r2.Lstat(filepath.Join(dir, "y"))
	c2.Put("k2", began, r2.Reads(), 2)
	if e := c2.entries["k2"]; len(e.absent) != 0 {
		t.Errorf("a directory written after the compile began grouped its absent paths: %+v", e.absent)
	}
}

// TestCacheSettle: a read younger than the settle time keeps nothing.
func TestCacheSettle(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Recorder{}
	_, _ = r.Stat(f)
	c := &Cache[int]{}
	if why := c.Put("k", time.Now(), r.Reads(), 1); why == "" || c.Len() != 0 {
		t.Errorf("a file written just now was kept (%q)", why)
	}
}
