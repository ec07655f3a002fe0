//go:build !linux && !darwin

package supervise

import (
	"syscall"
)

// kill sends sig (none when 0) to the process group and returns 1 while
// the group still has members, 0 once it is gone.
func (t *tree) kill(sig syscall.Signal) (left int) {
	t.within(func() { left = t.killHere(sig) })
	return left
}

func (t *tree) killHere(sig syscall.Signal) int {
	if t.pid <= 1 {
		return 0
	}
	if sig != 0 {
		_ = syscall.Kill(-t.pid, sig)
	}
	if syscall.Kill(-t.pid, 0) == nil {
		return 1
	}
	return 0
}

// treeEnv: no tag to find the tree by here.
func treeEnv(env []string) ([]string, string) { return env, "" }

// preferForOOM: only Linux has a per-process OOM score.
func (t *tree) preferForOOM() {}
