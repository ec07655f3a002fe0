package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
)

// outputDrain bounds how long the output pipes may stay open after the
// supervisor exited (it killed the command's tree, so they close at once).
const outputDrain = 2 * time.Second

// started is a supervisor on its way: its stdin (input or lifeline) and
// how to wait for its end.
type started struct {
	stdin io.WriteCloser
	// wait returns nil, an *exitStatus, or why the end is unknown.
	wait func() error
}

// exitStatus is a supervisor that ended with a non-zero shell-style code.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// startByHolder asks the holder to fork the supervisor, with our pipes as
// its stdio and the export pipe as its fd 3.
func (s *sandbox) startByHolder(ctx context.Context, argv []string, gate *backends.StartGate, exportW *os.File) (*started, error) {
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			_ = f.Close()
		}
	}
	var ends []*os.File // stdin r,w; stdout r,w; stderr r,w
	for range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ends)
			return nil, err
		}
		ends = append(ends, r, w)
	}
	stdinR, stdinW := ends[0], ends[1]
	outR, outW := ends[2], ends[3]
	errR, errW := ends[4], ends[5]
	passed := []*os.File{stdinR, outW, errW}
	if exportW != nil {
		passed = append(passed, exportW)
	}
	p, err := s.ctl.Start(ctx, argv, "", nil, passed)
	for _, f := range []*os.File{stdinR, outW, errW} {
		_ = f.Close()
	}
	if err != nil {
		closeAll([]*os.File{stdinW, outR, errR})
		return nil, err
	}
	var copies sync.WaitGroup
	for _, c := range []struct {
		w io.Writer
		r *os.File
	}{{gate.Stdout(), outR}, {gate.Stderr(), errR}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			_, _ = io.Copy(c.w, c.r)
		}()
	}
	wait := func() error {
		e, err := p.Wait()
		drained := make(chan struct{})
		go func() { copies.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(outputDrain):
			closeAll([]*os.File{outR, errR})
			<-drained
		}
		closeAll([]*os.File{outR, errR})
		switch {
		case err != nil:
			return err
		case e.Code != 0:
			return &exitStatus{code: e.Code}
		}
		return nil
	}
	return &started{stdin: stdinW, wait: wait}, nil
}

// startByRuntime runs the supervisor with a runtime exec (runsc, which
// cannot pass the holder a channel).
func (s *sandbox) startByRuntime(argv []string, gate *backends.StartGate, exportW *os.File) (*started, error) {
	rtArgs := []string{"exec"}
	if exportW != nil {
		rtArgs = append(rtArgs, "--preserve-fds", "1")
	}
	procPath, err := s.processFile("exec.json", argv)
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
	wait := func() error {
		err := x.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code := ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			return &exitStatus{code: code}
		}
		return err
	}
	return &started{stdin: stdin, wait: wait}, nil
}
