package selftest

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Survivors lists pids of processes whose argv holds token. macOS has no
// /proc: the process table and each argv come from sysctl (kern.proc.all,
// kern.procargs2), readable for the caller's own processes.
func Survivors(token string) []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	var pids []int
	for _, p := range procs {
		pid := int(p.Proc.P_pid)
		if pid <= 0 || pid == os.Getpid() {
			continue
		}
		// Exited (zombie) and other users' processes have no readable argv.
		b, err := unix.SysctlRaw("kern.procargs2", pid)
		if err == nil && strings.Contains(strings.Join(procArgv(b), "\x00"), token) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// describeSurvivors names the pids; macOS lists no parent or state here.
func describeSurvivors(pids []int) string { return fmt.Sprint(pids) }
