// Package sandboxinit is what the static triage-sandbox binary does inside a
// container sandbox. Hold is the container's long-lived process (under
// docker's tini): it keeps the sandbox alive until it is closed, and with a
// lifeline kills everything when its stdin closes, which happens when
// triage-sandbox dies, even by kill -9. Exec runs one command per `docker
// exec` under the shared supervisor, which kills the command's whole tree at
// its timeout and maps "not found"/"not executable" to 127/126.
package sandboxinit

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/inside/idlemem"
	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Export writes the staged paths for the host to copy back.
func Export(w io.Writer, paths []stage.Path, maxEntries int) error {
	return stage.ExportBounded(w, paths, maxEntries)
}

// Exit codes of Hold.
const (
	// exitcodeRefused: the holder or supervisor could not do its job.
	exitcodeRefused = exitcode.Refused
	// ExitLifelineCut: the owner is gone; everything was killed.
	ExitLifelineCut = exitcode.Killed
	// ExitTTL: the sandbox outlived its lifetime; everything was killed.
	ExitTTL = exitcode.Killed
)

// HoldOptions configure the holder.
type HoldOptions struct {
	// Lifeline is read until EOF; nil means no lifeline.
	Lifeline io.Reader
	// TTL is a backstop: past it everything is killed even if the lifeline
	// failed (a half-open connection).
	TTL    time.Duration
	Stderr io.Writer
	// Stage are the staged writable paths: before anything else, Hold
	// unpacks their copy from Lifeline (a tar stream that precedes the
	// lifeline proper) and reports on Stdout that it is in place.
	Stage  []stage.Path
	Stdout io.Writer
	// KillAll kills every other process the sandbox identity can signal;
	// tests replace it.
	KillAll func()
	// Control, when set, is the holder's end of the control channel: the
	// host starts commands through it (Helper's exec and export
	// subcommands only) instead of through a runtime exec. ControlConn is
	// the same when the holder dialled the host's socket itself.
	Control     *os.File
	ControlConn *net.UnixConn
	// Helper is this binary's path in the sandbox, and HelperEntries
	// the only subcommands of it the channel may start.
	Helper        string
	HelperEntries []protocol.Entry
	// SweepLeftovers: the holder kills what a command leaves behind when
	// its supervisor died first (see warden). The sandbox's holders set
	// it; a holder that cannot do it refuses to hold.
	SweepLeftovers bool
	// Thread, when set, is the warden's thread (with SweepLeftovers): the
	// one every child is started from. Nil: the warden starts its own.
	Thread *Thread
	// Score, when set, is the holder's own OOM score, opened before the
	// holder made itself undumpable (its /proc is root's then) and before
	// any confinement: the warden raises it around each resident
	// command's fork (see warden.score). Nil: a command's score is raised
	// through its /proc once it is forked.
	Score *supervise.OwnScore
	// RaiseSupervisors: a confinement keeps /proc read-only to the holder
	// and what it starts (the local backend's Landlock), so a supervisor
	// it starts cannot raise its command's score: the warden raises the
	// supervisor's at its fork instead.
	RaiseSupervisors bool
	// Forward, when set, is the forwarder to the network proxy, listening
	// before the holder says it is ready; one that cannot start refuses
	// the sandbox.
	Forward *protocol.Forward
	// armed, when set, is the holder's arming already done: RunHold arms
	// it before its set-up, and its process exits once Hold returns, so
	// Hold leaves its signal refusal in place (undoing it is a round trip
	// per signal with the runtime's signal thread: 0.3-0.9 ms of the
	// sandbox's end in a container, which the runtime's teardown waits
	// for). Nil: Hold arms itself and undoes the refusal when it returns.
	armed *armed
}

// Hold waits until the sandbox must end and kills everything in it. It
// returns the exit code the container ends with.
func Hold(ctx context.Context, o HoldOptions) int {
	killAll := o.KillAll
	if killAll == nil {
		killAll = killEveryone
	}
	defer armFor(o)()
	w, killAll, endWarden, err := startWarden(ctx, o, killAll)
	if err != nil {
		_ = protocol.WriteStatus(statusOut(o), protocol.Status{State: protocol.StateHolderFailed,
			Detail: "it cannot collect what commands leave behind: " + err.Error()})
		return exitcodeRefused
	}
	defer endWarden()
	// The lifetime counts from the holder's start, not from its staged
	// copy: a pooled sandbox waits for its copy until a run takes it, and
	// its lifetime bounds that wait too.
	ends := watchEnds(o.TTL)
	defer ends.stop()
	if len(o.Stage) > 0 {
		if code, ok := stageIn(ctx, o, ends, killAll); !ok {
			return code
		}
	}
	if o.Forward != nil {
		stopForward, err := startForward(o.Forward)
		if err != nil {
			_ = protocol.WriteStatus(statusOut(o), protocol.Status{State: protocol.StateHolderFailed, Detail: err.Error()})
			return exitcodeRefused
		}
		defer stopForward()
	}
	// Ready (and the staged copy in place): a runtime that cannot say when
	// the holder runs learns it from this status.
	_ = protocol.WriteStatus(o.Stdout, protocol.Status{State: protocol.StateReady})
	// Idle from here until a command: give back what the start and the
	// set-up left resident, and again after each command.
	quiet := idlemem.NewQuiet(idleRelease, idleRerelease)
	quiet.Busy()
	// The warden's polls make a little garbage every 250 ms; at Go's
	// default the heap grows to its 4 MiB minimum goal before a collection
	// (an idle holder went from 3.9 to 6.8 MiB in a minute). A small goal
	// keeps it near its set-up size, for a collection every few seconds.
	debug.SetGCPercent(idleGCPercent)
	defer quiet.Stop()
	// The channel closes before the holder kills everything: what that
	// kill does to a supervisor is the sandbox's end, not the command's
	// exit, and the host must learn it as such (not as a plain 137).
	ctlCtx, endControl := context.WithCancel(ctx)
	defer endControl()
	startControl(ctlCtx, o, w, quiet)
	stop := func() {
		endControl()
		killAll()
	}
	cut := make(chan struct{})
	if o.Lifeline != nil {
		go func() {
			_, _ = io.Copy(io.Discard, o.Lifeline)
			close(cut)
		}()
	}
	select {
	case <-cut:
		stop()
		return ExitLifelineCut
	case <-ends.ttl:
		return ends.lifetimeExceeded(o, stop)
	case <-ctx.Done():
		stop()
		return ExitLifelineCut
	}
}

// armFor arms the holder for o (see armHolder) unless RunHold did, and
// returns what undoes it when Hold returns: RunHold's own arming is left in place (its process
// exits right after). Armed before anything else runs, not beside it:
// threads the set-up's goroutines need while the reserve is being made
// are made on top of it and stay (an idle holder had 21-23 threads
// instead of 18; a thousand sessions, 4,000 tasks more). Before ready in
// any case: without a control channel a runtime exec may start a command
// as soon as the holder is ready.
func armFor(o HoldOptions) (disarm func()) {
	if o.armed != nil {
		return func() {}
	}
	return armHolder().stop
}

// startWarden starts the warden that collects what commands leave behind,
// when o asks for one (else w is nil), and returns the holder's kill as it
// must then be called; end stops the warden and says what it killed.
func startWarden(ctx context.Context, o HoldOptions, killAll func()) (w *warden, kill func(), end func(), err error) {
	if !o.SweepLeftovers {
		return nil, killAll, func() {}, nil
	}
	if w, err = newWarden(o.Thread); err != nil {
		return nil, nil, nil, err
	}
	w.score, w.raiseSupervisors = o.Score, o.RaiseSupervisors
	wctx, stop := context.WithCancel(ctx)
	go w.watch(wctx)
	end = func() {
		stop()
		if n := w.killedSoFar(); n > 0 {
			fmt.Fprintf(o.Stderr, "triage-sandbox: killed %d process(es) a command left behind when its supervisor died\n", n)
		}
	}
	// From the thread that started every child: under Landlock without
	// thread sync only that thread's kills reach them (see warden).
	return w, func() { w.onThread(killAll) }, end, nil
}

// stageIn unpacks the staged copy that comes ahead of the lifeline on
// stdin, however long it takes to come (a pooled sandbox's comes when a
// run takes it); the sandbox's lifetime or ctx end the wait as they end
// the sandbox. It reports whether the holder goes
// on, or the code it ends with.
func stageIn(ctx context.Context, o HoldOptions, ends holdEnds, killAll func()) (int, bool) {
	if o.Lifeline == nil {
		_ = protocol.WriteStatus(o.Stdout, protocol.Status{State: protocol.StateStagingFailed,
			Detail: "no stream to read the staged copy from"})
		return exitcodeRefused, false
	}
	_ = protocol.WriteStatus(o.Stdout, protocol.Status{State: protocol.StateAwaitingStage})
	unpacked := make(chan error, 1)
	go func() { unpacked <- stage.Unpack(o.Lifeline, o.Stage) }()
	select {
	case err := <-unpacked:
		if err != nil {
			// The host shows it as the reason the start failed.
			_ = protocol.WriteStatus(o.Stdout, protocol.Status{State: protocol.StateStagingFailed, Detail: err.Error()})
			return exitcodeRefused, false
		}
		return 0, true
	case <-ends.ttl:
		return ends.lifetimeExceeded(o, killAll), false
	case <-ctx.Done():
		killAll()
		return ExitLifelineCut, false
	}
}

// holdEnds are what ends a sandbox besides its lifeline: its lifetime.
// No signal does (see refuseSignals).
type holdEnds struct {
	ttl  <-chan time.Time
	stop func()
}

func watchEnds(ttl time.Duration) holdEnds {
	e := holdEnds{stop: func() {}}
	if ttl > 0 {
		timer := time.NewTimer(ttl)
		e.ttl = timer.C
		e.stop = func() { timer.Stop() }
	}
	return e
}

// armed is what must be in place before the holder's first command, made
// before the rest of its set-up (see armFor): the reserve of threads
// (supervise.ReserveThreads: a command may fill the process table, and
// the holder needing a thread then would die of it and take the sandbox
// with it) and the refusal of signals (refuseSignals: a command's kill(1,
// SIGTERM) must not end the sandbox).
type armed struct {
	unrefuse func()
}

// armHolder arms the holder: the reserve first, as threads the signal
// loop needs while the reserve is made are made on top of it and stay (18
// threads became 19-20 with the other order).
func armHolder() *armed {
	supervise.ReserveThreads()
	return &armed{unrefuse: refuseSignals()}
}

// stop ends the refusal of signals.
func (a *armed) stop() { a.unrefuse() }

func (holdEnds) lifetimeExceeded(o HoldOptions, stop func()) int {
	fmt.Fprintln(o.Stderr, "triage-sandbox: sandbox lifetime exceeded; killed")
	stop()
	return ExitTTL
}

// refusedSignals are the signals the holder takes and drops: each would
// otherwise end it or crash it. The Go runtime installs a handler for
// every signal, and a pid namespace's init gets from inside exactly the
// signals it has a handler for: a command's kill(1, SIGTERM) used to end
// its own sandbox (reported as "stopped from outside"), SIGQUIT or a
// user-sent SIGSEGV crashed the holder. The holder cannot tell a sender
// inside from one outside (Go shows no si_pid), so it heeds none: the
// outside stops a sandbox with SIGKILL, which nothing inside can send pid
// 1 (docker stop, a daemon shutting down and kubernetes send it after
// their grace), and the backend tells that apart by its own record.
// Notified rather than ignored: an ignored disposition would pass to the
// commands the holder starts itself (resident runs), a handled one does
// not survive their exec. SIGTSTP, SIGTTIN, SIGTTOU and SIGCONT keep the
// default the runtime leaves them, which the kernel does not deliver to
// an init from inside.
var refusedSignals = append([]os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP,
	syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGUSR1, syscall.SIGSEGV, syscall.SIGUSR2, syscall.SIGPIPE,
	syscall.SIGALRM, syscall.SIGTERM, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGIO, syscall.SIGSYS},
	linuxOnlySignals...)

// refuseSignals takes refusedSignals until the returned func is called.
// A fault the kernel raises (a real SIGSEGV) still crashes the holder: the
// runtime delivers only user-sent ones to a channel.
func refuseSignals() func() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, refusedSignals...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// startControl serves the control channel, when the holder has one, while
// the warden polls only as a backstop (every command comes through it).
// The holder is armed by then (armFor).
func startControl(ctx context.Context, o HoldOptions, w *warden, quiet *idlemem.Quiet) {
	if !hasControl(o) {
		return
	}
	if w != nil {
		w.commandsThroughHolder()
	}
	go func() {
		serveControl(ctx, o, w, quiet)
		if w != nil {
			w.commandsByRuntime()
		}
	}()
}

// hasControl: the holder has a control channel, through which (and only
// through which) the host starts commands.
func hasControl(o HoldOptions) bool { return o.Control != nil || o.ControlConn != nil }

// serveControl starts the host's commands until the channel ends. The
// holder makes itself undumpable first: a command running as the same
// identity must not take the channel's descriptor from it.
func serveControl(ctx context.Context, o HoldOptions, w *warden, quiet *idlemem.Quiet) {
	if err := undumpable(); err != nil {
		fmt.Fprintf(o.Stderr, "triage-sandbox: the control channel stays closed: %v\n", err)
		if o.Control != nil {
			_ = o.Control.Close()
		} else {
			_ = o.ControlConn.Close()
		}
		return
	}
	allowed := func(argv []string) error {
		// Exactly BINARY ENTRY SPEC (protocol.Argv); the helper decodes
		// the spec itself.
		if len(argv) == 3 && argv[0] == o.Helper && slices.Contains(o.HelperEntries, protocol.Entry(argv[1])) {
			return nil
		}
		return fmt.Errorf("the holder starts only %s %v with a spec", o.Helper, o.HelperEntries)
	}
	so := control.ServeOptions{Allowed: allowed}
	if w != nil {
		so.Children = quietChildren{w, quiet}
		so.Resident = (&resident{w: w, quiet: quiet}).take
	}
	serve := func() error { return control.Serve(ctx, o.Control, so) }
	if o.ControlConn != nil {
		serve = func() error { return control.ServeConn(ctx, o.ControlConn, so) }
	}
	if err := serve(); err != nil {
		fmt.Fprintf(o.Stderr, "triage-sandbox: %v\n", err)
	}
}

// idleRelease is how long the holder waits quiet, after its set-up or a
// command, before it gives back what that left resident (idlemem): a
// session's next command often follows at once.
const idleRelease = time.Second

// idleRerelease is how often an idle holder gives back again what its
// warden's polls (every 250 ms, or 5 s with a control channel) touched meanwhile: a release takes a
// millisecond or two (TestReleaseLowersRSS), so a thousand idle holders
// spend a few percent of one core on it.
const idleRerelease = 30 * time.Second

// idleGCPercent is the holder's GOGC once set up: a heap goal of 1 MiB
// at least (Go's minimum scales with it) instead of 4.
const idleGCPercent = 25

// quietChildren is the warden, which also tells quiet of each end.
type quietChildren struct {
	*warden
	quiet *idlemem.Quiet
}

func (c quietChildren) Exited(pid int) {
	c.warden.Exited(pid)
	c.quiet.Busy()
}

// statusOut is where the holder's status lines go.
func statusOut(o HoldOptions) io.Writer {
	if o.Stdout != nil {
		return o.Stdout
	}
	return o.Stderr
}

// killEveryone sends SIGKILL to every process this uid may signal: inside a
// sandbox that is every process of the sandbox, setsid'd or not.
func killEveryone() { _ = syscall.Kill(-1, syscall.SIGKILL) }

// ExecOptions configure one supervised command.
type ExecOptions struct {
	// Score, when set, is the supervisor's own OOM score, opened before
	// it made itself undumpable (its /proc is root's then): raised around
	// the command's fork (see supervise.OwnScore).
	Score   *supervise.OwnScore
	Argv    []string
	Dir     string // "" keeps the supervisor's own
	Timeout time.Duration
	Grace   time.Duration
	// Lifeline: stdin is the lifeline (its EOF kills the tree), not input.
	Lifeline bool
	Stdin    io.Reader
	Stdout   io.Writer
	Stderr   io.Writer
	// ExportTo, when set, receives the staged paths (Export) once the
	// command's whole tree is gone: the copy back without a second exec.
	ExportTo io.WriteCloser
	Stage    []stage.Path
	// MaxEntries bounds the entries of each staged directory it exports.
	MaxEntries int
	// Seccomp, when set, names a filter set the supervisor loads on itself
	// before it starts the command (for runtimes whose exec loads none).
	Seccomp string
	// Rlimits are the limits it sets on itself before the command
	// (protocol.Exec.Rlimits).
	Rlimits []protocol.Rlimit
}

// Exec runs one command and returns the exit code the helper ends with.
func Exec(ctx context.Context, o ExecOptions) int {
	if len(o.Argv) == 0 {
		fmt.Fprintln(o.Stderr, "triage-sandbox: empty command")
		return exitcodeRefused
	}
	if err := setRlimits(o.Rlimits); err != nil {
		fmt.Fprintf(o.Stderr, "triage-sandbox: %v\n", err)
		return exitcodeRefused
	}
	if o.Seccomp != "" {
		if err := seccompfilter.Apply(o.Seccomp); err != nil {
			fmt.Fprintf(o.Stderr, "triage-sandbox: %v\n", err)
			return exitcodeRefused
		}
	}
	// Forward an outside SIGTERM/SIGINT to the command's tree via ctx.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	// A parent of 0 is outside this pid namespace: a runtime exec into a
	// sandbox of its own, whose pid 1 is the holder or the init above it.
	code, _ := execute(ctx, o, supervise.Spec{SweepStrays: os.Getppid() == 0, Score: o.Score})
	return code
}

// execute runs o's command under spec (its process-wide settings) and
// exports after it: the supervisor process's and the resident one's.
func execute(ctx context.Context, o ExecOptions, spec supervise.Spec) (code int, alone bool) {
	spec.Argv, spec.Dir, spec.Stdout, spec.Stderr = o.Argv, o.Dir, o.Stdout, o.Stderr
	spec.Timeout, spec.Grace = o.Timeout, o.Grace
	if o.Lifeline {
		spec.Lifeline = o.Stdin
	} else {
		spec.Stdin = o.Stdin
	}
	if _, err := o.Stdout.Write([]byte{protocol.ExecStarted}); err != nil {
		fmt.Fprintf(o.Stderr, "triage-sandbox: cannot write to stdout: %v\n", err)
		return exitcodeRefused, false
	}
	res := supervise.Run(ctx, spec)
	if o.ExportTo != nil {
		if err := stage.ExportBounded(o.ExportTo, o.Stage, o.MaxEntries); err != nil {
			fmt.Fprintf(o.Stderr, "triage-sandbox: exporting the outputs: %v\n", err)
		}
		_ = o.ExportTo.Close()
	}
	return res.ExitCode, res.Alone
}
