package sandboxinit

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
)

// Stdio are an entry point's standard streams.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// RunHold is the holder's entry point: it holds the sandbox as spec says
// and returns the exit code, with which its process exits at once (its
// signals stay refused to the end: see HoldOptions.armed).
func RunHold(ctx context.Context, spec protocol.Hold, io Stdio) int {
	failed := func(detail string) int {
		_ = protocol.WriteStatus(io.Out, protocol.Status{State: protocol.StateHolderFailed, Detail: detail})
		return exitcodeRefused
	}
	// Opened while its /proc is still its own (see HoldOptions.Score).
	score, _ := supervise.OpenOwnScore()
	if err := guardFromCommand(spec.RunAs); err != nil {
		return failed(err.Error())
	}
	// Armed (see armHolder) before the rest of the set-up, not beside it
	// (see armFor).
	a := armHolder()
	setModes(spec.Modes, io.Err)
	o := HoldOptions{TTL: spec.TTL.D(), Stderr: io.Err, Stdout: io.Out, Stage: spec.Stage, SweepLeftovers: true, Forward: spec.Forward,
		Score: score, armed: a}
	if spec.Lifeline {
		o.Lifeline = io.In
	}
	self, err := os.Executable()
	if err != nil {
		return failed(err.Error())
	}
	helper := func() { o.Helper, o.HelperEntries = self, []protocol.Entry{protocol.EntryExec, protocol.EntryExport} }
	switch {
	case spec.ControlFD != 0:
		syscall.CloseOnExec(spec.ControlFD)
		o.Control = os.NewFile(uintptr(spec.ControlFD), "control")
		helper()
	case spec.ControlSock != "":
		// Dialled before anything else runs here: the host accepts only
		// the first connection. One that fails leaves the host on its
		// runtime's exec, told by this status.
		conn, err := control.Dial(spec.ControlSock)
		if err != nil {
			_ = protocol.WriteStatus(io.Out, protocol.Status{State: protocol.StateControlUnavailable, Detail: err.Error()})
			break
		}
		o.ControlConn = conn
		helper()
	}
	return Hold(ctx, o)
}

// RunExec is the supervisor's entry point: it runs one command as spec
// says and returns the exit code.
func RunExec(ctx context.Context, spec protocol.Exec, io Stdio) int {
	// Opened while its /proc is still its own (see ExecOptions.Score).
	score, _ := supervise.OpenOwnScore()
	if err := guardFromCommand(spec.RunAs); err != nil {
		fmt.Fprintf(io.Err, "triage-sandbox: %v\n", err)
		return exitcodeRefused
	}
	o := ExecOptions{Score: score, Argv: spec.Argv, Dir: spec.Dir, Timeout: spec.Timeout.D(), Grace: spec.Grace.D(), Lifeline: spec.Lifeline,
		Stdin: io.In, Stdout: io.Out, Stderr: io.Err, Seccomp: spec.Seccomp, Rlimits: spec.Rlimits}
	if spec.ExportFD != 0 {
		// The runtime passed it (runc exec --preserve-fds): close-on-exec at
		// once, so the command never inherits it.
		syscall.CloseOnExec(spec.ExportFD)
		o.ExportTo = os.NewFile(uintptr(spec.ExportFD), "export")
		o.Stage, o.MaxEntries = spec.Export.Stage, spec.Export.MaxEntries
	}
	return Exec(ctx, o)
}

// RunExport is the exporter's entry point.
func RunExport(spec protocol.Export, out, errOut io.Writer) int {
	if err := guardFromCommand(spec.RunAs); err != nil {
		fmt.Fprintf(errOut, "triage-sandbox: %v\n", err)
		return exitcodeRefused
	}
	if err := Export(out, spec.Stage, spec.MaxEntries); err != nil {
		fmt.Fprintf(errOut, "triage-sandbox: %v\n", err)
		return exitcodeRefused
	}
	return 0
}

// setModes gives the scratch directories their policy modes (HOME 0700)
// before any command runs. A directory that refuses is reported, not
// fatal: the mode keeps nothing from the sandbox's one user.
func setModes(modes []protocol.DirMode, stderr io.Writer) {
	for _, m := range modes {
		want := os.FileMode(m.Mode&0o777) | modeBits(m.Mode)
		// Only a mode that differs: /tmp is root's, and already right.
		if fi, err := os.Stat(m.Path); err == nil && fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) == want {
			continue
		}
		if err := os.Chmod(m.Path, want); err != nil {
			fmt.Fprintf(stderr, "triage-sandbox: setting the mode of %s: %v\n", m.Path, err)
		}
	}
}

// modeBits turns the setuid, setgid and sticky bits of a unix mode into
// Go's (os.Chmod does not read them from the low bits).
func modeBits(mode uint32) os.FileMode {
	var m os.FileMode
	if mode&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if mode&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}
