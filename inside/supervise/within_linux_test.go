package supervise

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestUsualEndIsOneTripToTheThread: a command that leaves nothing behind
// costs two trips to the thread that starts and signals it (its fork, and
// its end's SIGTERM with the group's SIGKILL), not three; one that leaves
// a process in its group still has it killed.
func TestUsualEndIsOneTripToTheThread(t *testing.T) {
	var trips atomic.Int32
	within := func(f func()) { trips.Add(1); f() }
	res, _, _, _ := runSpec(t, Spec{Argv: []string{"true"}, Within: within})
	if res.ExitCode != 0 {
		t.Fatalf("true: %+v", res)
	}
	if n := trips.Load(); n != 2 {
		t.Errorf("%d trips to the command's thread for `true`, want 2 (the fork, the end)", n)
	}

	// A background job in the command's process group that ignores
	// SIGTERM outlives the command's exit: the end's scan finds it, and it
	// is killed after the grace.
	trips.Store(0)
	pidFile := filepath.Join(t.TempDir(), "pid")
	res, _, _, _ = runSpec(t, Spec{Argv: sh("trap '' TERM; sleep 30 & echo $! > " + pidFile + "; exit 3"), Within: within, Grace: 100 * time.Millisecond})
	if res.ExitCode != 3 {
		t.Fatalf("exit 3: %+v", res)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(stat), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background job %d outlived the run", pid)
		}
	}
	if n := trips.Load(); n <= 2 {
		t.Errorf("%d trips with a process left to signal, want more than 2", n)
	}
}

// TestOthersAreNotAskedOnTheThread: Spec.Others is never called on the
// command's thread (a holder's Others takes the warden's lock, which one
// waiting for that thread may hold), also when a process started beside
// the command is there at its end; that process is left alone.
func TestOthersAreNotAskedOnTheThread(t *testing.T) {
	beside := exec.Command("sleep", "30")
	if err := beside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = beside.Process.Kill(); _ = beside.Wait() }()
	var onThread, askedOnThread atomic.Bool
	within := func(f func()) { onThread.Store(true); defer onThread.Store(false); f() }
	others := func(pid int) bool {
		if onThread.Load() {
			askedOnThread.Store(true)
		}
		return pid == beside.Process.Pid
	}
	for _, argv := range [][]string{{"true"}, sh("exit 5")} {
		res, _, _, _ := runSpec(t, Spec{Argv: argv, Within: within, Others: others})
		if res.LifelineCut || res.TimedOut {
			t.Fatalf("%v: %+v", argv, res)
		}
	}
	if askedOnThread.Load() {
		t.Error("Spec.Others was called on the command's thread")
	}
	if err := beside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process started beside the command is gone: %v", err)
	}
}
