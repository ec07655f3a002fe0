//go:build linux

package supervise

import (
	"bytes"
	"strconv"
)

// threadCount is how many threads this process has now (0: unknown).
func threadCount() int64 {
	b, err := readProcFile("/proc/self/status")
	if err != nil {
		return 0
	}
	_, rest, ok := bytes.Cut(b, []byte("\nThreads:"))
	if !ok {
		return 0
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
