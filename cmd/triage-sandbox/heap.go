package main

import "runtime/debug"

// shortLivedHeapLimit is the heap a `run` process may grow to before its
// garbage collector runs at all (see collectOnlyNearLimit).
const shortLivedHeapLimit = 32 << 20

// collectOnlyNearLimit turns the garbage collector's pacing off for a
// `run` in its own process: everything it allocates before the command
// (config, policy, the sandbox's spec: a few MiB) is needed to its end,
// and the one collection the default pacing runs in a cold run costs
// CPU the runtime's start wants (about 3 ms of a cold oci run's CPU). The
// memory limit is the backstop: past it the collector runs as usual, so
// a command that floods output (streamed through fixed buffers, capped)
// keeps the process near the limit, below the flood's RSS bound (64 MiB,
// BenchmarkRunOutputFlood). Never in a keeper, which lives long.
func collectOnlyNearLimit() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(shortLivedHeapLimit)
}
