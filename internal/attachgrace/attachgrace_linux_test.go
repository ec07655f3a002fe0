//go:build linux

package attachgrace

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
)

// On the real cgroup filesystem the move changes nothing, for the thread
// that makes it and for every other thread of the process, even one that
// is in a cgroup of its own (as the local backend's forking thread is in
// the sandbox's). As root only (else the write is refused, which Begin
// ignores).
func TestMoveInPlaceChangesNoMembership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writing a cgroup's tasks or cgroup.procs needs root")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, ok := cgroupfs.Own()
	if !ok {
		t.Skip("no mounted cgroup hierarchy lists this thread")
	}
	// Another thread in a cgroup of its own: a child of this thread's, in
	// the same v1 hierarchy (the unified hierarchy has no such thread).
	var aside *threadAside
	if !own.V2 {
		aside = setAside(t, own.Path)
		defer aside.stop(t)
	}
	before := cgroupsOf(t, "/proc/thread-self/cgroup")
	if err := func() error {
		done := make(chan error, 1)
		go func() { done <- Pass() }()
		return <-done
	}(); err != nil {
		t.Fatalf("moving a thread into its own cgroup (%s): %v", own.Path, err)
	}
	if after := cgroupsOf(t, "/proc/thread-self/cgroup"); after != before {
		t.Errorf("this thread's cgroups changed:\nbefore %s\nafter %s", before, after)
	}
	if aside != nil {
		if got := aside.cgroups(t); got != aside.want {
			t.Errorf("a thread in a cgroup of its own was moved:\nwant %s\ngot %s", aside.want, got)
		}
	}
}

func cgroupsOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// threadAside is a locked thread of this process moved alone into a new
// cgroup below dir.
type threadAside struct {
	tid  int
	want string
	dir  string
	quit chan struct{}
	wg   sync.WaitGroup
}

func setAside(t *testing.T, dir string) *threadAside {
	t.Helper()
	a := &threadAside{dir: dir + "/attachgrace-test-" + strconv.Itoa(os.Getpid()), quit: make(chan struct{})}
	if err := os.Mkdir(a.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ready := make(chan error, 1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		runtime.LockOSThread()
		// Not unlocked: the thread ends with the goroutine, out of the
		// test cgroup's way.
		a.tid = unix.Gettid()
		err := os.WriteFile(a.dir+"/tasks", []byte(strconv.Itoa(a.tid)), 0)
		if err == nil {
			a.want = cgroupsOfTid(a.tid)
		}
		ready <- err
		<-a.quit
	}()
	if err := <-ready; err != nil {
		close(a.quit)
		a.wg.Wait()
		_ = os.Remove(a.dir)
		t.Fatalf("moving a thread into %s: %v", a.dir, err)
	}
	return a
}

func cgroupsOfTid(tid int) string {
	b, _ := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/cgroup")
	return string(b)
}

func (a *threadAside) cgroups(t *testing.T) string { return cgroupsOfTid(a.tid) }

func (a *threadAside) stop(t *testing.T) {
	close(a.quit)
	a.wg.Wait()
	// The thread ends with its goroutine (it exited locked); the cgroup
	// is empty once the kernel has reaped it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := os.Remove(a.dir)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("removing the test's cgroup %s: %v", a.dir, err)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
