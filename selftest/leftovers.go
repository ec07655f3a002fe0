package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The canary directory's owner file names the process that planted it
// (pid and start time) and the tokens of what it started: a selftest
// killed with SIGKILL cannot close its canaries, and the next one's Plant
// removes them (sweepLeftovers).
const (
	canaryPrefix = "triage-selftest-"
	ownerFile    = "owner"
)

// tokenRE is a canary token; nothing else is ever killed by one read back.
var tokenRE = regexp.MustCompile(`^canary-[0-9a-f]{24}$`)

// processStart is pid's start time in clock ticks since boot (field 22 of
// /proc/PID/stat), which tells a live owner from a reused pid.
func processStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name (field 2) may hold spaces; it ends at the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}

// writeOwner records this process and the canaries' tokens in c.Dir,
// readable by this user only.
func (c *Canaries) writeOwner() error {
	start, ok := processStart(os.Getpid())
	if !ok {
		return nil // no /proc: no sweep either (sweepLeftovers)
	}
	body := fmt.Sprintf("%d %s %s %s\n", os.Getpid(), start, c.Token, c.SentinelToken)
	if err := os.WriteFile(filepath.Join(c.Dir, ownerFile), []byte(body), 0o600); err != nil {
		return fmt.Errorf("recording the canary directory's owner: %w", err)
	}
	return nil
}

// sweepLeftovers removes the canary directories under base whose owner is
// gone, with the processes they named (the sentinel, survivors), each
// ended by kill (KillByToken). A directory without a readable owner file,
// or whose owner still runs, is left alone: better a leftover than another
// selftest's canaries removed.
func sweepLeftovers(base string, kill func(token string)) {
	if _, ok := processStart(os.Getpid()); !ok {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(base, canaryPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 4 || !tokenRE.MatchString(f[2]) || !tokenRE.MatchString(f[3]) {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 0 {
			continue
		}
		if start, alive := processStart(pid); alive && start == f[1] {
			continue
		}
		for _, token := range []string{f[3], sandboxSurvivor + f[2], controlSurvivor + f[2]} {
			kill(token)
		}
		_ = os.RemoveAll(dir)
	}
}
