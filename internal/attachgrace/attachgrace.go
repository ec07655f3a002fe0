// Package attachgrace starts early the grace period that a container
// runtime's move of its container's first process into the container's
// cgroups waits for.
//
// A move of a process between cgroups (a write to cgroup.procs) takes the
// kernel's one global threadgroup lock for writing, and a writer first
// waits for an RCU grace period unless another writer's passed moments
// ago (the lock's rcu_sync stays entered for one more grace period after
// its last writer). runc makes that move in the middle of every start,
// with the container's init waiting: 9-13 ms of a 45-50 ms start on this
// machine's kernel, spent idle. Begin makes a move that changes nothing
// (this process into the cgroup it is in) on a goroutine as the runtime
// is spawned, so the grace period passes beside the runtime's own start
// and its move finds it passed. A kernel whose hierarchy is mounted with
// favordynmods never waits; there this costs a write.
package attachgrace

import (
	"context"
	"os"
	"path"
	"strconv"

	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
)

// Begin starts the grace period beside the caller, best effort: where this
// process cannot write its own cgroup.procs (not root, a read-only or
// missing cgroup filesystem) nothing happens and the runtime waits as it
// would have. The move is of this process into its own cgroup, so its
// membership is as before.
func Begin(ctx context.Context) {
	if file := procsFile(); file != "" {
		begin(ctx, file)
	}
}

// begin writes this process's pid into file on a goroutine; the channel
// gives the write's error once it is done.
func begin(ctx context.Context, file string) <-chan error {
	done := make(chan error, 1)
	go func() {
		defer phase.Begin(ctx, "start.attach-grace")()
		done <- os.WriteFile(file, []byte(strconv.Itoa(os.Getpid())), 0)
	}()
	return done
}

// procsFile is the cgroup.procs file of this process's cgroup in one
// mounted hierarchy (see cgroupfs.Own), or "".
func procsFile() string {
	dir, ok := cgroupfs.Own()
	if !ok {
		return ""
	}
	return path.Join(dir, "cgroup.procs")
}
