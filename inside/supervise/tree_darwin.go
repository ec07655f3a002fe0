//go:build darwin

package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/procargs"
)

// treeTagVar marks every process of a command's tree in its environment:
// macOS has no subreaper, so a child that calls setsid leaves the process
// group and, once orphaned, its parent link too. Found by the tag, it is
// killed with the tree. A process that re-executes itself with a cleared
// environment loses the tag; the process group remains the other handle.
const treeTagVar = "TRIAGE_SANDBOX_TREE"

// treeEnv adds a tag unique to this run to the command's environment.
func treeEnv(env []string) ([]string, string) {
	var r [12]byte
	_, _ = rand.Read(r[:])
	tag := hex.EncodeToString(r[:])
	return append(slices.Clone(env), treeTagVar+"="+tag), tag
}

// kill sends sig (none when 0) to the process group and to every process
// carrying the tag, and returns how many are left.
func (t *tree) kill(sig syscall.Signal) (left int) {
	t.within(func() { left = t.killHere(sig) })
	return left
}

func (t *tree) killHere(sig syscall.Signal) int {
	if t.pid <= 1 {
		return 0
	}
	left := 0
	if sig != 0 {
		_ = syscall.Kill(-t.pid, sig)
	}
	if syscall.Kill(-t.pid, 0) == nil {
		left++
	}
	for _, pid := range t.tagged() {
		if sig != 0 {
			_ = syscall.Kill(pid, sig)
		}
		left++
	}
	return left
}

// tagged lists the live processes (of this user: only those expose their
// environment) whose environment holds the tag.
func (t *tree) tagged() []int {
	if t.tag == "" {
		return nil
	}
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid())
	if err != nil {
		return nil
	}
	want := treeTagVar + "=" + t.tag
	var out []int
	for _, p := range procs {
		pid := int(p.Proc.P_pid)
		if pid <= 1 || pid == t.self || p.Proc.P_stat == sZomb {
			continue
		}
		b, err := unix.SysctlRaw("kern.procargs2", pid)
		if err != nil {
			continue
		}
		if _, env := procargs.Parse(b); slices.Contains(env, want) {
			out = append(out, pid)
		}
	}
	return out
}

// sZomb is a zombie's p_stat (sys/proc.h SZOMB): it has no arguments left.
const sZomb = 5

// preferForOOM: only Linux has a per-process OOM score.
func (t *tree) preferForOOM() {}
