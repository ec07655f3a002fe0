// Package attachgrace starts early the grace period that a container
// runtime's move of its container's first process into the container's
// cgroups waits for.
//
// A move of a process between cgroups (a write to cgroup.procs, or a
// thread's id to a v1 tasks file) takes the kernel's one global
// threadgroup lock for writing, and a writer first waits for an RCU grace
// period unless another writer's passed moments ago (the lock's rcu_sync
// stays entered for one more grace period after its last writer). runc
// makes that move in the middle of every start, with the container's
// init waiting: 9-13 ms of a 45-50 ms start on this machine's kernel,
// spent idle. Begin makes a move that changes nothing on a goroutine as
// the runtime is spawned, so the grace period passes beside the runtime's
// own start and its move finds it passed. A kernel whose hierarchy is
// mounted with favordynmods never waits; there this costs a write.
package attachgrace

import (
	"context"
	"os"
	"path"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
)

// Begin starts the grace period beside the caller, best effort: where the
// move cannot be written (not root, a read-only or missing cgroup
// filesystem) nothing happens and the runtime waits as it would have.
//
// What moves is the goroutine's own thread, into the cgroup it is in (by
// its id in a v1 hierarchy's tasks file): never another thread of this
// process, which may be in a sandbox's groups on its own (the local
// backend forks its helper from a thread that joined them), so no
// membership changes. Only where every thread of a process shares its
// cgroup (the unified hierarchy alone) is it the process, into its own.
func Begin(ctx context.Context) {
	go func() {
		defer phase.Begin(ctx, "start.attach-grace")()
		_ = moveInPlace()
	}()
}

// moveInPlace moves the calling goroutine's thread (or, with the unified
// hierarchy alone, this process) into the cgroup it is in.
func moveInPlace() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	file, id, ok := target()
	if !ok {
		return nil
	}
	return os.WriteFile(file, []byte(id), 0)
}

// target is the file a move that changes nothing writes and what it writes
// there, for the calling (locked) thread.
func target() (file, id string, ok bool) {
	dir, ok := cgroupfs.Own()
	if !ok {
		return "", "", false
	}
	if dir.V2 {
		return path.Join(dir.Path, "cgroup.procs"), strconv.Itoa(os.Getpid()), true
	}
	return path.Join(dir.Path, "tasks"), strconv.Itoa(unix.Gettid()), true
}
