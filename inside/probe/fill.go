//go:build linux || darwin

package probe

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// opFill tries to take more of the writable paths than their bound: with
// "bytes", one file that large, really allocated (allocate: fallocate on
// Linux, F_PREALLOCATE on macOS, written zeros where the filesystem has
// neither: a sparse file would prove nothing);
// with "files", that many empty files. OK means it got all of it. What it
// made is removed before it returns, so the host keeps nothing either way,
// except with "keep_unbounded": files that all fit (the sandbox's own
// filesystem has no inode bound) stay, for the copy back to face them.
func opFill(s Step, _ string) Observation {
	if len(s.List) == 0 {
		return Observation{Detail: "no directory"}
	}
	dir := filepath.Join(s.List[0], ".selftest-fill")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return Observation{Errno: errnoName(err), Detail: "mkdir " + dir}
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(dir)
		}
	}()
	if v := s.Args["bytes"]; v != "" {
		want, _ := strconv.ParseInt(v, 10, 64)
		got, err := allocate(filepath.Join(dir, "fill.bin"), want)
		o := Observation{OK: got >= want, Values: map[string]string{"bytes": strconv.FormatInt(got, 10)},
			Detail: fmt.Sprintf("took %d MiB of %d MiB", got>>20, want>>20)}
		if err != nil {
			o.Errno = errnoName(err)
		}
		return o
	}
	want, _ := strconv.Atoi(s.Args["files"])
	// With "proof", once that many files exist a filesystem that itself
	// reports free inodes for all the rest has room for them: a bounded
	// one (the sandbox's tmpfs) never reports more than its bound, so the
	// shortcut only ever ends a fill that would have succeeded.
	proof, _ := strconv.Atoi(s.Args["proof"])
	if s.Args["keep_unbounded"] == "true" {
		// Files that all fit must exist for the copy back to face them: a
		// filesystem with room for them (a pod's memory emptyDir has no
		// inode bound) is filled for real.
		proof = 0
	}
	n := 0
	var err error
	for ; n < want; n++ {
		if proof > 0 && n == proof && roomFor(dir, want-n) {
			return Observation{OK: true, Values: map[string]string{"files": strconv.Itoa(want)},
				Detail: fmt.Sprintf("made %d of %d files; the filesystem reports free inodes for the other %d", n, want, want-n)}
		}
		if err = createEmpty(filepath.Join(dir, strconv.Itoa(n))); err != nil {
			break
		}
	}
	o := Observation{OK: n >= want, Values: map[string]string{"files": strconv.Itoa(n)}, Detail: fmt.Sprintf("made %d of %d files", n, want)}
	keep = o.OK && s.Args["keep_unbounded"] == "true"
	if err != nil {
		o.Errno = errnoName(err)
	}
	return o
}

// roomFor: the filesystem holding dir reports at least n free inodes.
func roomFor(dir string, n int) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Ffree >= uint64(n)
}

// allocate claims size bytes for path, chunk by chunk (reserve), and
// returns how many it got.
func allocate(path string, size int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	const chunk = 16 << 20
	var got int64
	for got < size {
		n := min(chunk, size-got)
		if err := reserve(f, got, n); err != nil {
			return got, err
		}
		got += n
	}
	return got, nil
}
