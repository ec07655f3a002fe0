// Package sandboxinit is the tiny init that runs inside a sandbox as the
// container's command (under docker's tini): it execs the user's argv in its
// own process group, maps "not found" and "not executable" to 127 and 126,
// forwards signals to the group, and with a lifeline kills everything when
// its stdin closes, which happens when triage-sandbox dies, even by kill -9.
package sandboxinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Options configure one init run.
type Options struct {
	Argv []string
	// Lifeline: stdin is the lifeline, not the command's input.
	Lifeline bool
	// TTL is a backstop: past it everything is killed even if the host's
	// timeout and the lifeline both failed (a half-open connection).
	TTL    time.Duration
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Run starts the command and returns the exit code the container should end
// with.
func Run(ctx context.Context, o Options) int {
	if len(o.Argv) == 0 {
		fmt.Fprintln(o.Stderr, "triage-sandbox init: empty command")
		return 125
	}
	path, err := exec.LookPath(o.Argv[0])
	if err != nil {
		return reportStartError(o.Stderr, o.Argv[0], err)
	}
	cmd := exec.Command(path, o.Argv[1:]...)
	cmd.Args[0] = o.Argv[0]
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	if !o.Lifeline {
		cmd.Stdin = o.Stdin
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		return reportStartError(o.Stderr, o.Argv[0], err)
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var ttl <-chan time.Time
	if o.TTL > 0 {
		timer := time.NewTimer(o.TTL)
		defer timer.Stop()
		ttl = timer.C
	}
	lifelineCut := make(chan struct{})
	if o.Lifeline && o.Stdin != nil {
		go func() {
			_, _ = io.Copy(io.Discard, o.Stdin)
			close(lifelineCut)
		}()
	}
	for {
		select {
		case err := <-exited:
			return exitCode(err)
		case s := <-sigs:
			// triage-sandbox itself never signals the init (it kills the
			// whole container), so this came from outside: a daemon
			// shutting down or a `docker stop`. Say so.
			fmt.Fprintf(o.Stderr, "triage-sandbox: the sandbox was stopped from outside (%v), e.g. by the Docker daemon shutting down\n", s)
			_ = syscall.Kill(-pgid, s.(syscall.Signal))
		case <-lifelineCut:
			// Our parent is gone: nobody will read the result.
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return 137
		case <-ttl:
			fmt.Fprintln(o.Stderr, "triage-sandbox: sandbox lifetime exceeded; killed")
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return 137
		case <-ctx.Done():
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return 137
		}
	}
}

func reportStartError(w io.Writer, name string, err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(w, "triage-sandbox: %s: command not found in the sandbox\n", name)
		return 127
	default:
		fmt.Fprintf(w, "triage-sandbox: %s: cannot execute: %v\n", name, err)
		return 126
	}
}

// exitCode maps a wait error to a shell-style exit code.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 126
}
