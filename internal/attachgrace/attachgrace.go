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
// spent idle. A move that changes nothing, made on a goroutine as the
// runtime is spawned, lets the grace period pass beside the runtime's
// own start and its move finds it passed (Pass). A kernel whose
// hierarchy is mounted with favordynmods never waits; there this costs a
// write.
package attachgrace
