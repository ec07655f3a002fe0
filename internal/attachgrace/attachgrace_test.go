package attachgrace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The move is of this process, by its pid, into the file it is given.
func TestBeginWritesOwnPid(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cgroup.procs")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-begin(context.Background(), file); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(os.Getpid()); string(got) != want {
		t.Errorf("wrote %q, want this process's pid %s", got, want)
	}
}

// On the real cgroup filesystem the move changes nothing: this process is
// in the same cgroups after it. As root only (else the write is refused,
// which Begin ignores).
func TestBeginChangesNoMembership(t *testing.T) {
	file := procsFile()
	if file == "" {
		t.Skip("no mounted cgroup hierarchy lists this process")
	}
	if os.Geteuid() != 0 {
		t.Skip("writing a cgroup.procs file needs root")
	}
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if err := <-begin(context.Background(), file); err != nil {
		t.Fatalf("moving this process into its own cgroup (%s): %v", file, err)
	}
	after, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("cgroups changed:\nbefore %s\nafter %s", before, after)
	}
}
