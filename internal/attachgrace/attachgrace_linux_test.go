//go:build linux

package attachgrace

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
)

// On the real cgroup filesystem the move changes no thread's cgroups: not
// the one that makes it, not any other of the process, even one that is
// in a cgroup of its own (as the local backend's forking thread is in the
// sandbox's). As root only (else the write is refused, which the oci
// backend ignores).
func TestPassChangesNoMembership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writing a cgroup's tasks or cgroup.procs needs root")
	}
	own, ok := cgroupfs.Own()
	if !ok {
		t.Skip("no mounted cgroup hierarchy lists this thread")
	}
	if !own.V2 {
		// The unified hierarchy has no thread of a cgroup of its own.
		setAside(t, own.Path)
	}
	before := threadCgroups(t)
	if err := Pass(); err != nil {
		t.Fatalf("moving a thread into its own cgroup (%s): %v", own.Path, err)
	}
	after := threadCgroups(t)
	for tid, was := range before {
		if now, ok := after[tid]; ok && now != was {
			t.Errorf("thread %s moved:\nbefore %s\nafter %s", tid, was, now)
		}
	}
}

// threadCgroups is each thread's /proc/self/task/TID/cgroup.
func threadCgroups(t *testing.T) map[string]string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, task := range tasks {
		if b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/cgroup"); err == nil {
			m[task.Name()] = string(b)
		}
	}
	return m
}

// setAside moves a thread of this process alone into a new cgroup below
// dir until the test ends, when it is moved back to dir and the cgroup is
// removed.
func setAside(t *testing.T, dir string) {
	t.Helper()
	cg := dir + "/attachgrace-test-" + strconv.Itoa(os.Getpid())
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	quit, ended := make(chan struct{}), make(chan error, 1)
	moved := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := []byte(strconv.Itoa(unix.Gettid()))
		if err := os.WriteFile(cg+"/tasks", tid, 0); err != nil {
			moved <- err
			ended <- nil
			return
		}
		moved <- nil
		<-quit
		ended <- os.WriteFile(dir+"/tasks", tid, 0)
	}()
	t.Cleanup(func() {
		close(quit)
		if err := <-ended; err != nil {
			t.Errorf("moving the thread back into %s: %v", dir, err)
		}
		if err := os.Remove(cg); err != nil {
			t.Errorf("removing the test's cgroup: %v", err)
		}
	})
	if err := <-moved; err != nil {
		t.Fatalf("moving a thread into %s: %v", cg, err)
	}
}
