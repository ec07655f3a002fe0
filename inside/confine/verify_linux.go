package confine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// verifyThreads reads every thread's status back and fails unless each one
// holds no capability in any set, has no_new_privs and a seccomp filter,
// and runs as uid and gid: Restrict fails closed rather than trusting that
// each call it made reached every thread. The bounding set must be empty on
// forker, which must be there: the only thread children are started from
// (see DropForkerBounding).
func verifyThreads(uid, gid, forker int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("verify: listing threads: %w", err)
	}
	ids := fmt.Sprintf("%d\t%d\t%d\t%d", uid, uid, uid, uid)
	gids := fmt.Sprintf("%d\t%d\t%d\t%d", gid, gid, gid, gid)
	want := map[string]string{
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
		"NoNewPrivs": "1", "Seccomp": "2", "Uid": ids, "Gid": gids,
	}
	var errs []error
	forkerSeen := false
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/status")
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited
		}
		if err != nil {
			return fmt.Errorf("verify: thread %s: %w", t.Name(), err)
		}
		got := statusFields(string(b))
		if tid == forker {
			forkerSeen = true
		}
		for k, v := range want {
			if k == "CapBnd" && tid != forker {
				continue
			}
			if got[k] != v {
				errs = append(errs, fmt.Errorf("thread %s: %s is %q, want %q", t.Name(), k, got[k], v))
			}
		}
	}
	if !forkerSeen {
		errs = append(errs, fmt.Errorf("the thread that starts children (%d) is gone", forker))
	}
	if len(errs) > 0 {
		return fmt.Errorf("verify: %w", errors.Join(errs...))
	}
	return nil
}

// statusFields parses /proc/PID/status's "Key:\tvalue" lines.
func statusFields(s string) map[string]string {
	m := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
