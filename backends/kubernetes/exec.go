package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/staging"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Exec runs one command through the in-sandbox supervisor, started by an
// exec in the holder's container; the rest is holderexec.Run's, as on
// every backend. The copy back is a second exec (the exporter): an exec
// stream has no spare descriptor.
func (s *sandbox) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	ended := func() error { return fmt.Errorf("the sandbox ended%s", s.Said()) }
	if err := s.Admit(cmd, ended); err != nil {
		return backends.Result{Sandbox: s.ID()}, err
	}
	s.Mu.Lock()
	defer s.Mu.Unlock()
	rt := s.r.Info.Traits()
	run := holderexec.Run{Policy: s.p, Sandbox: (*holderView)(s), Start: s.byExec(cmd.Stdin != nil),
		Manifest: &s.Manifest, Seccomp: execSeccomp, Rlimits: execRlimits(s.p, rt, s.r.Info.NodePids)}
	if rt.UserSpaceKernel {
		// The memory limit ends the whole pod (gVisor's kernel is charged
		// in its cgroup): the news is the holder's OOMKilled end.
		run.OOMKills, run.OOMEndsSandbox = s.oomKills, true
	}
	res, err := run.Exec(ctx, cmd, out)
	if err == nil {
		s.copyBack(ctx, &res)
	}
	return res, err
}

// byExec starts the supervisor with an exec. input: the command reads the
// exec's stdin, so it has no lifeline and a cancel ends the whole pod.
func (s *sandbox) byExec(input bool) holderexec.Starter {
	return func(ctx context.Context, spec protocol.Exec, gate *holderexec.OutputHold, _ *os.File) (*holderexec.Started, error) {
		pr, pw := io.Pipe()
		done, err := s.stream(ctx, launch.ExecArgv(spec), pr, gate.Stdout(), gate.Stderr())
		if err != nil {
			return nil, err
		}
		// pr stays open: the stream's copier ends when holderexec closes
		// pw (a closed pipe under it would be a library's log line).
		started := &holderexec.Started{Stdin: pw, Wait: func() error {
			err := exitOf(<-done)
			s.awaitLostSandbox(err)
			return err
		}}
		if input {
			started.Stop = s.kill
		}
		return started, nil
	}
}

// stream runs argv in the holder's container with the given streams; the
// channel gets the stream's end.
func (s *sandbox) stream(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (<-chan error, error) {
	opts := execOptions(argv)
	opts.Stdin = stdin != nil
	ex, err := s.b.executor(s.b.cli.podStreamURL(s.r.Pod.Namespace, s.r.Pod.Name, "exec", opts))
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		// The supervisor ends the command; the stream is not cut by a
		// cancel (holderexec closes the lifeline instead).
		done <- ex.StreamWithContext(context.WithoutCancel(ctx), remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}()
	return done, nil
}

// execLost is the code of an exec whose runtime lost the process: runsc
// exec's when the sandbox under it ended (its kernel OOM-killed with it).
const execLost = 128

// Bounds of awaitLostSandbox: the attach (the holder's stdio) ends at once
// with a sandbox that ended; the pod's status trails it by the kubelet's
// next look.
const (
	lostAttachWait = 3 * time.Second
	lostStatusWait = 10 * time.Second
)

// awaitLostSandbox: under a user-space kernel an exec that ended with
// execLost may be the whole sandbox's end (the memory limit took gVisor's
// kernel); the run judges that by the pod's status (oomKills), so wait
// until the holder is seen gone, when its attach ended too. A command
// that exits 128 by itself, its sandbox alive, costs lostAttachWait.
func (s *sandbox) awaitLostSandbox(err error) {
	var st *holderexec.ExitStatus
	if !s.r.Info.Traits().UserSpaceKernel || !errors.As(err, &st) || st.Code != execLost {
		return
	}
	select {
	case <-s.attached:
	case <-time.After(lostAttachWait):
		return
	}
	select {
	case <-s.Gone:
	case <-time.After(lostStatusWait):
	}
}

// oomKills is holderexec.Run.OOMKills under a user-space kernel: 1 once
// the holder's container ended OOMKilled (the whole sandbox), else 0,
// waiting up to settle for the pod's status to say so.
func (s *sandbox) oomKills(settle time.Duration) uint64 {
	deadline := time.Now().Add(settle)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		pod, err := s.b.cli.getPod(ctx, s.r.Pod.Namespace, s.r.Pod.Name)
		cancel()
		if err == nil && oomKilled(pod) {
			return 1
		}
		if err != nil || !time.Now().Before(deadline) {
			return 0
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// oomKilled: the holder's container ended by the memory limit.
func oomKilled(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == holderContainer && c.State.Terminated != nil && c.State.Terminated.Reason == "OOMKilled" {
			return true
		}
	}
	return false
}

// exitOf is an exec stream's end as holderexec reads it.
func exitOf(err error) error {
	var ce utilexec.CodeExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return &holderexec.ExitStatus{Code: ce.Code}
	}
	return fmt.Errorf("the exec stream broke off: %w", err)
}

// copyBack exports the staged writable paths and applies them to the host,
// after every command however it ended.
func (s *sandbox) copyBack(ctx context.Context, res *backends.Result) {
	gone := func() bool { return s.Ended() || s.killed.Load() }
	holderexec.CopyBack(ctx, s.p, gone, s.export, res)
}

// export streams the export in the pod over the exec API and applies it
// to the host.
func (s *sandbox) export(ctx context.Context, out []stage.Path) (*stage.Report, error) {
	pr, pw := io.Pipe()
	var stderr holderexec.SmallBuffer
	done, err := s.stream(ctx, launch.ExportArgv(s.p), nil, pw, &stderr)
	if err != nil {
		return nil, err
	}
	go func() { pw.CloseWithError(<-done) }()
	m, rep, aerr := stage.Apply(ctx, pr, s.Manifest, staging.StageSpec(s.p, staging.ExportPaths(s.p, out)))
	_, rerr := io.Copy(io.Discard, pr)
	s.Manifest = m
	if rerr != nil {
		return &rep, fmt.Errorf("copying the outputs back: the export in the sandbox failed: %v: %s", rerr, strings.TrimSpace(stderr.String()))
	}
	return &rep, aerr
}

// holderView is the sandbox as holderexec sees it.
type holderView sandbox

func (h *holderView) ID() string              { return (*sandbox)(h).ID() }
func (h *holderView) Exited() <-chan struct{} { return h.Gone }
func (h *holderView) Kill()                   { (*sandbox)(h).kill() }
func (h *holderView) Killed() bool            { return h.killed.Load() }
func (h *holderView) Said() string            { return h.Holder.Said() }
