//go:build !darwin

package selftest

import (
	"fmt"
	"os"
	"strconv"
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

// describeSurvivors says what each pid is (its parent, state and the start
// of its argv), read before it is killed: a survivor's line names the
// process, so a host process is told from the sandbox's.
func describeSurvivors(pids []int) string {
	var parts []string
	for _, pid := range pids {
		d := strconv.Itoa(pid)
		if st, err := os.ReadFile("/proc/" + d + "/stat"); err == nil {
			// pid (comm) state ppid ...: the comm may hold spaces.
			if i := strings.LastIndexByte(string(st), ')'); i > 0 {
				if f := strings.Fields(string(st)[i+1:]); len(f) >= 2 {
					d += " state " + f[0] + " ppid " + f[1]
				}
			}
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
			argv := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
			if len(argv) > 120 {
				argv = argv[:120] + "…"
			}
			d += " argv " + strconv.Quote(argv)
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, "; ")
}
