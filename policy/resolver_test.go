package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResolverIsEvalSymlinks: the resolver answers as filepath.EvalSymlinks
// does for every kind of path the credential list meets: plain, missing,
// a symlinked directory above it, a symlink as the last element (relative
// and absolute, to a missing target), a loop, a file used as a directory.
func TestResolverIsEvalSymlinks(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) {
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, rel string) {
		if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
			t.Fatal(err)
		}
	}
	mk("home/u/.config/gh")
	mk("store/ssh")
	ln(filepath.Join(root, "home/u"), "homelink")
	ln("../../store/ssh", "home/u/.ssh")
	ln(filepath.Join(root, "store/nowhere"), "home/u/.aws")
	ln("loop", "home/u/loop")
	if err := os.WriteFile(filepath.Join(root, "home/u/file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{
		"/", root, "home/u", "home/u/.config/gh", "home/u/.config/missing", "homelink/.config/gh",
		"homelink/.ssh", "home/u/.ssh", "home/u/.aws", "home/u/loop", "home/u/file/x",
		"homelink/../home/u/.ssh", "missing/deeper/still",
	}
	r := resolver{m: map[string]resolved{}}
	for _, rel := range paths {
		p := rel
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, rel)
		}
		// Twice: the second answer comes from the memo.
		for range 2 {
			want, wantErr := filepath.EvalSymlinks(p)
			got, err := r.eval(p)
			if got != want || (err == nil) != (wantErr == nil) {
				t.Errorf("eval(%s) = %q, %v; EvalSymlinks says %q, %v", rel, got, err, want, wantErr)
			}
		}
	}
}
