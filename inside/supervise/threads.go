package supervise

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// spareThreads is how many OS threads beyond GOMAXPROCS the supervisor
// keeps ready: one per blocking call it may sit in at once (the wait for
// the command, the lifeline or stdin, stdout and stderr to a slow reader,
// the export, signals), with room to spare. Measured: a supervisor under a
// fork bomb writing to a stalled reader peaked at 7 threads.
const spareThreads = 12

// helperProcs bounds GOMAXPROCS in the sandbox's helpers (the holder, the
// supervisor): they wait and copy streams, and every P is one more thread
// the reserve holds out of the sandbox's process budget (on a 64-core host
// a reserve scaled by GOMAXPROCS would be 76 threads a helper).
const helperProcs = 2

// HelperTasks is the most tasks (threads) one helper holds once its threads
// are reserved: its Ps, the spares and the runtime's own (sysmon, the
// signal and template threads, and a margin). A process limit counted in
// tasks (gVisor's RLIMIT_NPROC) must leave this much per helper.
const HelperTasks = helperProcs + spareThreads + 6

// ReserveThreads keeps the helper's Ps plus spareThreads OS threads ready,
// as Run does before it starts a command: also for a long-lived process in
// the same process table as the commands (the sandbox's holder), which must
// not die when one of them fills it.
//
// A process that reserved once does not again while none of its threads
// ended since (the runtime never ends an idle thread, only one whose
// goroutine exits locked to it): a resident supervisor's holder does not
// pay for it on every command.
func ReserveThreads() {
	n := min(runtime.GOMAXPROCS(0), helperProcs)
	runtime.GOMAXPROCS(n)
	want := int64(n + spareThreads)
	if r := reserved.Load(); r != 0 && int64(r>>32) >= want {
		if now := threadCount(); now >= int64(uint32(r)) {
			return
		}
	}
	reserveThreads(int(want))
	if now := threadCount(); now > 0 {
		reserved.Store(want<<32 | now)
	}
}

// reserved is the last reservation in this process: how many threads
// (high half) and the process's thread count right after (low half). It
// describes the process (its runtime's threads), as the subreaper flag
// does.
var reserved atomic.Int64

// reserveThreads makes the Go runtime start n OS threads now, which it
// then keeps idle for reuse. A command that fills the process table (a
// fork bomb at the pids limit) would otherwise make the runtime's next
// thread creation fail, and a Go program dies of that ("fatal error:
// newosproc", exit 2): the supervisor gone, the tree left without its
// timeout. Each goroutine holds its own thread until all n are up.
func reserveThreads(n int) {
	var up, done sync.WaitGroup
	release := make(chan struct{})
	up.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			up.Done()
			<-release
			// Unlocked before the goroutine ends, the thread returns to the
			// runtime's idle list instead of exiting with it.
			runtime.UnlockOSThread()
		}()
	}
	up.Wait()
	close(release)
	done.Wait()
}
