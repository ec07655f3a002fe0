//go:build linux

package supervise

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	subreaperOnce sync.Once
	subreaperOK   bool
)

// becomeSubreaper makes orphans of the tree (setsid'd, double-forked)
// re-parent to this process instead of pid 1, so they stay findable. It
// reports whether the kernel has subreapers (gVisor's has not).
func becomeSubreaper() bool {
	subreaperOnce.Do(func() { subreaperOK = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil })
	return subreaperOK
}

// sysProcAttr puts the command in its own process group (the tree's first
// handle) and kills it if this process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// tree is the command (pid, also its process group) and every descendant
// of this process (self).
type tree struct {
	pid, self int
	tag       string
	// within runs the kills on the thread that started the command.
	within func(func())
	// others are children of self outside the tree (nil: none).
	others func(pid int) bool
	// alone: the last scan of /proc (descendants) found no process but
	// pid 1, self and the command: nothing in the sandbox beside the tree
	// then, so nothing left for a holder's sweep (Result.Alone).
	alone bool
}

// waitExited blocks until the command has exited but leaves it a zombie:
// its pid, the tree's process-group id, cannot be reused while the tree is
// being killed.
func (t *tree) waitExited() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, t.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != syscall.EINTR {
			return
		}
	}
}

// collect reaps the command once it has exited.
func (t *tree) collect() (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(t.pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return ws, err
		}
	}
}

// kill sends sig (none when 0) to the process group and to every live
// descendant outside it (once each: a second SIGTERM means "hurry" to
// some programs), reaps zombies re-parented here, and returns how many
// processes of the tree are left, dead or alive, not counting the
// command's own zombie.
func (t *tree) kill(sig syscall.Signal) int {
	if sig != 0 && t.pid > 1 {
		t.within(func() { _ = syscall.Kill(-t.pid, sig) })
	}
	return t.afterGroup(sig)
}

// termThenKill is kill(SIGTERM) and, when nothing but the command's own
// zombie is left below this process (the usual end: a command that left
// nothing behind), the group's SIGKILL that starts killAll, in one trip
// to the thread that started the command (Spec.Within: each trip is a
// hand-over between threads) instead of two. The look on that thread asks
// nothing of Spec.Others (whose lock may be held by one waiting for this
// very thread) and reaps nothing: anything else there (a process started
// beside the command, an orphan's zombie) and the rest is kill's, off the
// thread. It returns what kill(SIGTERM) does, and whether the SIGKILL
// went.
func (t *tree) termThenKill() (left int, killed bool) {
	if t.pid <= 1 {
		return t.kill(syscall.SIGTERM), false
	}
	t.within(func() {
		_ = syscall.Kill(-t.pid, syscall.SIGTERM)
		if t.nothingButTheCommand() {
			_ = syscall.Kill(-t.pid, syscall.SIGKILL)
			killed = true
		}
	})
	if killed {
		return 0, true
	}
	return t.afterGroup(syscall.SIGTERM), false
}

// nothingButTheCommand: no process below this one but the command's own
// zombie (a scan of /proc, as descendants', without Spec.Others).
func (t *tree) nothingButTheCommand() bool {
	for _, p := range allProcs() {
		if p.pid != t.self && p.ppid == t.self && (p.pid != t.pid || p.state != 'Z') {
			return false
		}
	}
	return true
}

// afterGroup is kill once the group has had sig: the scan, its reaping,
// and sig to every live descendant outside the group.
func (t *tree) afterGroup(sig syscall.Signal) int {
	left := 0
	var signal []int
	for _, p := range t.descendants() {
		switch {
		case p.pid == t.pid:
			if p.state == 'Z' {
				continue // reaped by collect, for its status
			}
		case p.state == 'Z' && p.ppid == t.self:
			var ws syscall.WaitStatus
			if n, _ := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil); n == p.pid {
				continue
			}
		}
		if sig != 0 && p.state != 'Z' && p.pgrp != t.pid {
			signal = append(signal, p.pid)
		}
		left++
	}
	if len(signal) > 0 {
		t.within(func() {
			for _, pid := range signal {
				_ = syscall.Kill(pid, sig)
			}
		})
	}
	return left
}

type proc struct {
	pid, ppid, pgrp int
	state           byte
	start           uint64 // clock ticks after boot
}

// dead: exited (a zombie) or being reaped, not yet gone.
func (p proc) dead() bool { return p.state == 'Z' || p.state == 'X' }

// descendants lists every process below this one, from the ppid links in
// /proc/*/stat. Without /proc it finds nothing and only the process group
// is signalled.
func (t *tree) descendants() []proc {
	children := make(map[int][]proc)
	procs := allProcs()
	t.alone = len(procs) > 0
	for _, p := range procs {
		if p.pid != 1 && p.pid != t.self && p.pid != t.pid {
			t.alone = false
		}
		if p.pid == t.self || (p.ppid == t.self && p.pid != t.pid && t.others != nil && t.others(p.pid)) {
			continue // started beside the command: not its tree
		}
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []proc
	seen := map[int]bool{t.self: true} // a racy scan may show odd links
	queue := []int{t.self}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range children[parent] {
			if !seen[c.pid] {
				seen[c.pid] = true
				out = append(out, c)
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}

// readStat reads state, ppid and process group of pid; the command name may hold any
// byte, so fields are counted from its last ')'.
func readStat(pid int) (proc, bool) {
	b, err := readProcFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64) // field 22
	if err1 != nil || err2 != nil || err3 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0], start: start}, true
}

// treeEnv: the subreaper finds the whole tree; no tag is needed.
func treeEnv(env []string) ([]string, string) { return env, "" }

// commandOOMScoreAdj is the command's oom_score_adj: the highest, so that
// when the sandbox runs out of memory the kernel kills the command's
// processes, never the supervisor that enforces its timeout (raising a
// score needs no privilege; lowering one does, below where a privileged
// writer put it).
const commandOOMScoreAdj = "1000"

// preferForOOM marks the command as the OOM killer's first choice when
// its fork did not inherit it (Spec.Score): written right after the exec,
// so a child the command forks at once may keep the supervisor's score; a
// failure (a /proc that hides it, or is read-only) leaves the sandbox's.
func (t *tree) preferForOOM() {
	_ = os.WriteFile("/proc/"+strconv.Itoa(t.pid)+"/oom_score_adj", []byte(commandOOMScoreAdj), 0)
}
