// Package oomwatch counts out-of-memory kills in a sandbox's memory
// cgroup, so a run can say that its command (or, under gVisor, the whole
// sandbox) was killed at the memory limit rather than merely by SIGKILL.
package oomwatch

import "time"

// Counter is what a run asks before and after its command.
type Counter interface {
	// Kills is the number of OOM kills seen so far. Once the cgroup is
	// gone it waits up to settle for a notification still on its way.
	Kills(settle time.Duration) uint64
	Close() error
}
