package seatbelt

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// processStart is a process's start time, or "" when it is gone: with the
// pid it names a process across pid reuse.
func processStart(pid int) string {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || k.Proc.P_pid != int32(pid) {
		return ""
	}
	t := k.Proc.P_starttime
	return fmt.Sprintf("%d.%06d", t.Sec, t.Usec)
}
