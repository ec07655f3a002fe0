package main

import "runtime/debug"

// shortLivedGCPercent is the collector's pacing for a `run` in its own
// process (Go's default is 100).
const shortLivedGCPercent = 400

// paceForShortLife lets a `run` process's heap grow to five times what is
// live (at least 16 MiB, Go's 4 MiB floor scaled) before the collector
// runs: a cold run allocates about 3.6 MiB in all, so it never collects,
// where the default pacing ran one collection in every cold run, CPU the
// runtime's start wants on a 2-core machine (about 3 ms of a cold oci
// run's CPU, and its preemption signals). Pacing, not a switch: a process
// that lives long (a command streaming output through fixed buffers, a
// large copy back) still collects, at five times its live heap, with no
// limit to thrash against. Never in a keeper, which lives long.
func paceForShortLife() { debug.SetGCPercent(shortLivedGCPercent) }
