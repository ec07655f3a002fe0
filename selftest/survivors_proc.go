//go:build !darwin

package selftest

import (
	"fmt"
	"os"
	"strings"
)

// Survivors lists pids of processes whose argv holds token.
func Survivors(token string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), token) {
			pids = append(pids, pid)
		}
	}
	return pids
}
