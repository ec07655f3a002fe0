package oci

import (
	"context"
	"os"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// startByRuntime runs the supervisor with a runtime exec (runsc, which
// cannot pass the holder a channel).
func (s *sandbox) startByRuntime(_ context.Context, spec protocol.Exec, gate *holderexec.OutputHold, exportW *os.File) (*holderexec.Started, error) {
	rtArgs := []string{"exec"}
	if exportW != nil {
		rtArgs = append(rtArgs, "--preserve-fds", "1")
	}
	procPath, err := s.execProcessFile(spec)
	if err != nil {
		return nil, err
	}
	x := s.rt(append(rtArgs, "--process", procPath, s.id)...)
	x.Stdout, x.Stderr = gate.Stdout(), gate.Stderr()
	if exportW != nil {
		x.ExtraFiles = []*os.File{exportW}
	}
	x.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Without input, stdin is the supervisor's lifeline: closing it kills
	// the command's tree.
	stdin, err := x.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := x.Start(); err != nil {
		return nil, err
	}
	wait := func() error { return holderexec.ExitOf(x.Wait()) }
	return &holderexec.Started{Stdin: stdin, Wait: wait}, nil
}
