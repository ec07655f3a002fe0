package sandboxinit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// warden kills what a command leaves behind once its supervisor is gone.
// A supervisor kills its command's whole tree before it ends; one that
// died first (killed by its own command, which runs as the same identity,
// or starved) leaves the tree behind, and in an agent session that tree
// would outlive its command and its timeout. Orphans come to the holder:
// it is a child subreaper (or the sandbox's pid 1), so any child it did
// not start is such a leftover, and so is any child of the sandbox's pid 1
// other than the holder when pid 1 is an init above it (docker-init).
//
// The warden starts the holder's children and kills leftovers from one
// OS thread of its own: where Landlock confines the holder (the local
// backend) without thread sync, each thread that was running at the
// restriction got a domain of its own, and signal scoping refuses a kill
// into another thread's domain (seen: EPERM for every leftover when the
// supervisor had been started from a different thread).
type warden struct {
	self int
	// thread runs the warden's jobs (see onThread).
	thread *Thread
	// initAbove: the holder's parent is the sandbox's pid 1, an init that
	// gets the orphans of supervisors a runtime exec started.
	initAbove bool
	// noSubreaper: the kernel has no child subreapers (gVisor's), so the
	// orphans of a live supervisor's tree come to pid 1 too: leftovers are
	// told apart only while no supervisor runs.
	noSubreaper bool
	mu          sync.Mutex
	started     map[int]bool
	// killed counts the leftovers killed, for the holder's log.
	killed int
	// resident counts commands running resident (at most one): the
	// holder's orphans are theirs meanwhile, not leftovers.
	resident int
	// quietSince: without subreapers, when the scans began to find no
	// supervisor running (zero: one runs, or none has been looked for).
	quietSince time.Time
	// every is the time between polls (zero: wardenPoll); changed says
	// it changed to the watch that waits.
	every   atomic.Int64
	changed chan struct{}
	// score, when set, is the holder's own OOM score, raised around the
	// fork of each resident command (supervise.OwnScore), and of each
	// supervisor when raiseSupervisors: under Landlock (the local backend)
	// /proc is read-only to the holder and what it starts, so no score
	// can be raised once forked, and a command of many small processes got
	// the holder, the largest one left, killed, and the sandbox with it.
	score            *supervise.OwnScore
	raiseSupervisors bool
}

// wardenPoll is how often the warden looks without being told a child
// ended: supervisors a runtime exec started are not the holder's children.
const wardenPoll = 250 * time.Millisecond

// wardenBackstop is how often it looks while every command comes through
// the holder's control channel: each supervisor is then the holder's child,
// whose end (SIGCHLD) starts a sweep at once, and a resident command's end
// does too; the poll only backs that up. An idle holder polling every
// 250 ms cost 1.5 ms of CPU a second, a core and a half for 1,000 idle
// sessions.
const wardenBackstop = 5 * time.Second

// interval is the time between polls now.
func (w *warden) interval() time.Duration {
	if d := time.Duration(w.every.Load()); d > 0 {
		return d
	}
	return wardenPoll
}

// pollEvery sets the time between polls and tells the watch.
func (w *warden) pollEvery(d time.Duration) {
	w.every.Store(int64(d))
	if w.changed == nil {
		return
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// commandsThroughHolder slows the polls to the backstop while the host
// starts every command through the control channel (until
// commandsByRuntime). Not without subreapers: there a dead supervisor's
// orphans come to pid 1 and are told from a live one's only by polls.
func (w *warden) commandsThroughHolder() {
	if !w.noSubreaper {
		w.pollEvery(wardenBackstop)
	}
}

// commandsByRuntime: the channel ended, and the host may start commands
// by a runtime exec again, whose supervisors only the polls see end.
func (w *warden) commandsByRuntime() { w.pollEvery(wardenPoll) }

// Start starts a child of the holder on the warden's thread and records
// it. Under a confinement that keeps /proc read-only (raiseSupervisors), a
// supervisor (argv's entry is exec) is started with the holder's score
// raised, so it and its command are the OOM killer's choice before the
// holder; elsewhere a supervisor raises its command's itself, and keeps
// its own below it. An exporter keeps the holder's.
func (w *warden) Start(argv []string, start func() (int, error)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var pid int
	var err error
	score := w.score
	if !w.raiseSupervisors || len(argv) < 2 || protocol.Entry(argv[1]) != protocol.EntryExec {
		score = nil
	}
	w.onThread(func() { _, _ = score.Raised(func() { pid, err = start() }) })
	if err == nil {
		w.started[pid] = true
	}
	return err
}

// onThread runs f on the warden's own locked OS thread and waits for it.
func (w *warden) onThread(f func()) { w.thread.Do(f) }

// Exited forgets a child that ended and sweeps what it left behind.
func (w *warden) Exited(pid int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.started, pid)
	w.sweepLocked()
}

// residentBegins stops the sweeps until residentEnds: a sweep under way
// finishes first, so none takes the resident command for a leftover.
func (w *warden) residentBegins() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resident++
}

// residentEnds lets the sweeps run again, once the resident command's
// tree is gone; its caller sweeps then (after its end is replied): what a
// supervisor process that died meanwhile left is a leftover now.
func (w *warden) residentEnds() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resident--
}

// isStarted: pid is a process the holder started (a supervisor or an
// exporter), not a resident command's orphan.
func (w *warden) isStarted(pid int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started[pid]
}

// sweep looks for leftovers and kills them.
func (w *warden) sweep() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweepLocked()
}

func (w *warden) killedSoFar() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.killed
}

// settled reports whether the holder's orphans in procs, scanned at now,
// may be taken for leftovers. Not while a supervisor a runtime exec
// started runs: where orphans come to pid 1 (gVisor's kernel has no
// subreapers, and the holder's own prctl is no proof of it: it succeeded
// once under load while the orphans still came to pid 1) they may be its
// command's; elsewhere they came from a supervisor that died, and wait at
// most until the live one ends. Without subreapers, only after no
// supervisor was seen for a whole poll: one scan that missed a live one
// must not kill what its command left running on purpose.
func (w *warden) settled(procs map[int]proc, now time.Time) bool {
	if supervisorRunning(procs) {
		w.quietSince = time.Time{}
		return false
	}
	if !w.noSubreaper {
		return true
	}
	if w.quietSince.IsZero() {
		w.quietSince = now
	}
	return now.Sub(w.quietSince) >= wardenPoll
}

// leftovers are the processes (pid -> parent) that nobody started and
// that came to the holder or to the init above it, with all their
// descendants. Unless settled, only the holder's dead children.
func (w *warden) leftovers(procs map[int]proc, settled bool) []int {
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var out []int
	if !settled {
		// Orphans now may be a running command's: only reap the dead.
		for pid, p := range procs {
			if p.ppid == w.self && p.zombie && !w.started[pid] {
				out = append(out, pid)
			}
		}
		return out
	}
	var add func(pid int)
	add = func(pid int) {
		out = append(out, pid)
		for _, c := range children[pid] {
			add(c)
		}
	}
	for pid, p := range procs {
		if pid == w.self || w.started[pid] {
			continue
		}
		if p.ppid == w.self || (w.initAbove && p.ppid == 1) {
			add(pid)
		}
	}
	return out
}

// supervisorRunning: a process a runtime exec started (its parent is
// outside the sandbox: 0) other than the sandbox's pid 1 is alive.
func supervisorRunning(procs map[int]proc) bool {
	for pid, p := range procs {
		if pid != 1 && p.ppid == 0 && !p.zombie {
			return true
		}
	}
	return false
}

// proc is what the warden reads of a process.
type proc struct {
	ppid   int
	zombie bool
}
