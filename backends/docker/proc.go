package docker

import (
	"strings"
)

// procStartTime returns field 22 (starttime) of a /proc/PID/stat line. The
// command name (field 2) may contain spaces and parentheses, so fields are
// counted from the last ')'.
func procStartTime(stat string) string {
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
