// Package confine is the Linux confinement layer of the local backend: the
// part that runs inside the helper process and turns it into the sandbox.
//
// The orchestrator never calls Enter or Restrict on itself (both refuse
// unless they run as pid 1 of a new pid namespace, inside a user namespace,
// holding CAP_SYS_ADMIN there). It re-executes its own static binary as the
// helper:
//
//	attr, err := confine.Namespaces(plan.UID, plan.GID, os.Geteuid(), os.Getegid())
//	cmd.SysProcAttr = attr // started from a goroutine locked to its thread (Pdeathsig)
//	// the plan reaches the helper as JSON on a pipe
//
// and the helper, already in its new user, mount, pid, network, IPC, UTS
// and cgroup namespaces, does:
//
//	p, err := confine.ReadPlan(pipe)
//	err = confine.Enter(ctx, p)    // new root, /proc, /dev, masks, pivot_root, hostname, lo
//	// ... anything else that still needs privileges ...
//	err = confine.Restrict(ctx, p) // ids, capabilities, no_new_privs, Landlock, seccomp, rlimits
//
// after which it is the sandbox's holder, and every command it forks
// inherits all of it. Nothing after Restrict can undo it.
//
// What each layer covers (research/hostile.md §4.2):
//   - namespaces: the network (lo only), host processes and signals (own
//     pid namespace and fresh /proc), host IPC and hostname; the user
//     namespace maps the sandbox's uid and gid alone (no host root inside);
//   - the mount namespace: the filesystem view; only what the plan binds
//     exists, read-only unless marked writable (which also stops chmod,
//     utime and truncation that Landlock cannot), credentials masked, a
//     minimal /dev, /sys read-only or absent;
//   - capabilities, securebits and no_new_privs: no privilege inside, none
//     to regain through setuid files or exec as uid 0;
//   - Landlock: defence in depth inside the new root (a bound path the plan
//     does not list stays unreadable), plus signal and abstract-socket
//     scoping from ABI 6;
//   - seccomp (package seccompfilter): kernel surface a sandbox has no use for.
//
// Plans, the seccomp rules and their BPF build on every OS, so `render` can
// print them anywhere; only Namespaces, Enter, Restrict and Probe need
// Linux (kernel 5.13 or later: Landlock; Enter uses the mount API of 5.12).
package confine
