//go:build linux

package supervise

import (
	"bytes"
	"strconv"
)

// threadCount is how many threads this process has now (0: unknown):
// num_threads of /proc/self/stat (field 20), which the kernel writes in
// half the time of /proc/self/status (asked before every command).
func threadCount() int64 {
	b, err := readProcFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	// The command name may hold any byte: fields count from its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 18 {
		return 0
	}
	n, err := strconv.ParseInt(string(f[17]), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
