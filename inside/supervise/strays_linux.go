package supervise

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// sweepStrays kills every process in the sandbox but pid 1, the holder and
// this supervisor (with SweepStrays, where the kernel has no subreapers).
// While this supervisor runs no other, what is left is what a command left
// behind: orphans re-parented to pid 1, out of reach of the tree.
func sweepStrays() {
	self := os.Getpid()
	pid1IsHolder := sameComm(1, self)
	// Until a scan finds none alive: a process SIGKILLed a moment ago may
	// still show as running (bounded, as the tree's own kill is).
	deadline := time.Now().Add(killBound)
	for pause := 500 * time.Microsecond; time.Now().Before(deadline); pause = min(2*pause, 50*time.Millisecond) {
		pids := strays(allProcs(), self, pid1IsHolder)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(pause)
	}
}

// strays are the live processes to kill: none while another supervisor
// (a process the runtime started: its parent, 0, is outside) runs; else
// every one but pid 1, self and the holder. pid1IsHolder: pid 1 is the
// holder itself; otherwise it is an init and the holder is its eldest
// child (a leftover is always younger than the holder).
func strays(procs []proc, self int, pid1IsHolder bool) []int {
	holder := 1
	if !pid1IsHolder {
		holder = 0
		var eldest proc
		for _, p := range procs {
			if p.ppid == 1 && (holder == 0 || p.start < eldest.start || (p.start == eldest.start && p.pid < eldest.pid)) {
				holder, eldest = p.pid, p
			}
		}
	}
	var out []int
	for _, p := range procs {
		if p.pid == 1 || p.pid == self || p.pid == holder || p.dead() {
			continue
		}
		if p.ppid == 0 {
			return nil // another supervisor runs: its tree is not a stray
		}
		out = append(out, p.pid)
	}
	return out
}

// Process is what /proc/PID/stat tells of a process.
type Process struct {
	PID, PPID int
	Zombie    bool // exited (or being reaped), not yet gone
}

// Processes lists every process in /proc (of this pid namespace).
func Processes() []Process {
	procs := allProcs()
	out := make([]Process, 0, len(procs))
	for _, p := range procs {
		out = append(out, Process{PID: p.pid, PPID: p.ppid, Zombie: p.dead()})
	}
	return out
}

// allProcs reads every process in /proc.
func allProcs() []proc {
	names, err := readDirNames("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil {
			if p, ok := readStat(pid); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// sameComm: pids a and b run programs of the same name.
func sameComm(a, b int) bool {
	ca, err1 := readProcFile("/proc/" + strconv.Itoa(a) + "/comm")
	cb, err2 := readProcFile("/proc/" + strconv.Itoa(b) + "/comm")
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}
