package ownership

import (
	"os"
	"strconv"
	"strings"
)

// ProcessStart is a process's start time (clock ticks since boot, field
// 22 of /proc/PID/stat), or "" when it is gone: with the pid it names a
// process across pid reuse, so a sweep can tell a live owner. A zombie is
// gone: it has exited and only waits for its parent to read its status
// (an owner killed with SIGKILL is one until then, and what it owned must
// not wait for its parent).
func ProcessStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	if state := statState(string(b)); state == "Z" || state == "X" {
		return ""
	}
	return StatStartTime(string(b))
}

// statState returns field 3 (state) of a /proc/PID/stat line.
func statState(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(stat[i+1:])
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// StatStartTime returns field 22 (starttime) of a /proc/PID/stat line. The
// command name (field 2) may contain spaces and parentheses, so fields are
// counted from the last ')'.
func StatStartTime(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(stat[i+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
