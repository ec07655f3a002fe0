package sandboxinit

import (
	"context"
	"os"
	"slices"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/inside/idlemem"
	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
)

// resident is the supervisor resident in the holder: a command in a warm
// sandbox is forked by the holder itself, under supervise.Run in a
// goroutine of the holder, instead of under a supervisor process started
// for it (a start of this binary, ~20 ms, on every command). It keeps
// every guarantee of the supervisor process:
//
//   - the command's whole tree is killed at its end, at its timeout, at a
//     cut lifeline and when the holder ends the sandbox (supervise.Run,
//     with the holder a child subreaper, so orphans come to it);
//   - the copy back follows the tree's end, on the same descriptor;
//   - the command inherits the holder's confinement (seccomp,
//     no_new_privs, Landlock, identity), and the holder is undumpable
//     (serveControl), so a command cannot trace it or open its
//     descriptors through /proc;
//   - the command is forked, and its tree signalled, from the warden's
//     thread (see warden: under Landlock without thread sync only that
//     thread's signals reach what it started), and with a parent-death
//     signal tied to that thread, which lives as long as the holder.
//
// Only one command at a time runs resident: supervise.Run takes the
// holder's orphans for its tree. A request that comes while one runs, or
// that a resident run cannot serve as asked (a seccomp filter to load on
// the supervisor, a kernel without subreapers), starts a supervisor
// process as before, and the resident tree leaves that process and what is
// below it alone (supervise.Spec.Others). The warden sweeps nothing while
// a resident command runs: the holder's orphans are that command's then,
// and its own end kills them.
//
// The run never holds the warden's lock nor its thread while it waits:
// each fork or kill is one short job on the thread (an earlier attempt
// that waited on the warden's thread hung at the first timeout, whose
// kills queued behind it).
type resident struct {
	w    *warden
	busy atomic.Bool
	// quiet is told of each command's end (nil: not told).
	quiet *idlemem.Quiet
}

// take is control.ServeOptions.Resident: argv is BINARY __exec SPEC
// (already allowed), files the request's descriptors.
func (r *resident) take(argv []string, files []*os.File) (control.ResidentRun, bool) {
	if r.w == nil || r.w.noSubreaper || len(argv) != 3 || protocol.Entry(argv[1]) != protocol.EntryExec || len(files) < 3 {
		return nil, false
	}
	spec, err := protocol.DecodeExec(argv[2:])
	if err != nil || spec.Seccomp != "" || len(spec.Rlimits) != 0 || len(spec.Argv) == 0 {
		// The supervisor process refuses it with its reason, or loads the
		// filter (or sets the limits) on itself before its command.
		return nil, false
	}
	var export *os.File
	if spec.ExportFD != 0 {
		if spec.ExportFD < 3 || spec.ExportFD >= len(files) || spec.Export == nil {
			return nil, false
		}
		export = files[spec.ExportFD]
	}
	if !r.busy.CompareAndSwap(false, true) {
		return nil, false
	}
	r.w.residentBegins()
	return func(ctx context.Context) (int, func()) {
		// The end is replied once the tree is gone; the warden's sweep for
		// what a supervisor process that died meanwhile left waits until
		// after the reply (after), off the command's path. The next
		// command may be taken before that sweep: the sweep then finds a
		// resident command running and leaves it to that one's end.
		defer r.busy.Store(false)
		defer r.w.residentEnds()
		if r.quiet != nil {
			defer r.quiet.Busy()
		}
		code, alone := r.run(ctx, spec, files, export)
		if alone {
			// The end's last scan found nothing in the sandbox but pid 1,
			// the holder and the command: no supervisor process, no
			// orphan, so nothing for this sweep (a third scan of /proc
			// per command). What starts after that scan is a resident
			// command's (its own end), a started supervisor's (swept at
			// its exit) or a runtime exec's (the watch's next poll).
			return code, func() {}
		}
		return code, r.w.sweep
	}, true
}

// run is one resident command: its code once its tree is gone, and
// whether the end found it alone in the sandbox (supervise.Result.Alone).
func (r *resident) run(ctx context.Context, spec protocol.Exec, files []*os.File, export *os.File) (int, bool) {
	defer closeFiles(files)
	o := ExecOptions{Argv: spec.Argv, Dir: spec.Dir, Timeout: spec.Timeout.D(), Grace: spec.Grace.D(),
		Lifeline: spec.Lifeline, Stdin: files[0], Stdout: files[1], Stderr: files[2]}
	if export != nil {
		o.ExportTo = nopCloser{export} // closed with the rest, after the run
		o.Stage, o.MaxEntries = spec.Export.Stage, spec.Export.MaxEntries
	}
	if spec.Lifeline {
		if lifeline := pollable(files[0]); lifeline != nil {
			defer lifeline.Close()
			o.Stdin = lifeline
		}
	}
	return execute(ctx, o, supervise.Spec{Within: r.w.onThread, Others: r.w.isStarted, Score: r.w.score})
}

// pollable is a non-blocking duplicate of a lifeline, read through the
// poller: its reader then ends when the run closes it instead of holding
// a thread until the host closes its end. Only for a lifeline: the flag is
// the open file's, which the command never gets (its stdin is /dev/null).
func pollable(f *os.File) *os.File {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "lifeline")
}

// nopCloser keeps Exec from closing a file the run closes itself.
type nopCloser struct{ *os.File }

func (nopCloser) Close() error { return nil }

func closeFiles(files []*os.File) {
	for _, f := range slices.Backward(files) {
		_ = f.Close()
	}
}
