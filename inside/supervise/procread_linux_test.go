package supervise

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReadProcFile: the raw reader returns a file whole, past its first
// buffer, as os.ReadFile does, and an error for one that is not there.
func TestReadProcFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 5000} {
		want := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		path := filepath.Join(dir, strconv.Itoa(size))
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readProcFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("size %d: got %d bytes, %v; want them all", size, len(got), err)
		}
	}
	if _, err := readProcFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file read without an error")
	}
	// /proc's own files report size 0: read to their end all the same.
	status, err := readProcFile("/proc/self/status")
	if err != nil || !bytes.Contains(status, []byte("\nThreads:")) {
		t.Errorf("/proc/self/status: %q, %v", status, err)
	}
}

// TestReadDirNames: every entry, over more than one getdents buffer, and
// neither . nor ..; /proc lists this process.
func TestReadDirNames(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 400 { // ~40 bytes an entry: past one 8 KiB buffer
		name := fmt.Sprintf("entry-%03d-%s", i, strings.Repeat("x", 20))
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	got, err := readDirNames(dir)
	slices.Sort(got)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %d names (%v), want %d", len(got), err, len(want))
	}
	procs, err := readDirNames("/proc")
	if err != nil || !slices.Contains(procs, strconv.Itoa(os.Getpid())) {
		t.Errorf("/proc: %d names, %v; this process not among them", len(procs), err)
	}
	if _, err := readDirNames(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory listed without an error")
	}
}
