package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holder"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/oomwatch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/staging"
	"github.com/triage-sandbox/triage-sandbox/backends/oci/netup"
	"github.com/triage-sandbox/triage-sandbox/internal/attachgrace"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Bounds of the sandbox's own steps.
const (
	startTimeout = 30 * time.Second
	// closeGrace: how long a closed sandbox's holder has to end by itself.
	closeGrace = 3 * time.Second
)

// sandbox is a running bundle: its holder's stdin (our pipe) is the
// lifeline; commands are started by the holder over its control channel
// (runsc: `runtime exec`s). runc and crun start it detached (`run
// --detach`: the runtime ends once the holder runs, and the holder, its
// orphan, comes to this process, a child subreaper, which reaps it;
// detach.go); runsc, and any runtime of a one-shot sandbox, stay in the
// foreground, holding the holder.
type sandbox struct {
	*holder.Base
	b       *Backend
	p       *policy.Policy
	id, dir string
	// runtime is the runtime's path; traits what it is.
	runtime string
	traits  runtimes.Traits
	release func()

	run      *exec.Cmd
	lifeline io.WriteCloser
	// detached: the runtime was started with --detach; heldPidV is then
	// the holder's pid (our child once the runtime ended), and heldEnd how
	// it ended, set before Gone closes.
	detached bool
	// oneShot: the sandbox runs one command (backends.StartOptions.OneShot);
	// its lifeline is cut once that command's result is in (Exec).
	oneShot  bool
	heldPidV atomic.Int64
	heldEnd  *os.ProcessState
	// ctl starts commands through the holder (runtimes that pass
	// descriptors); nil means a runtime exec per command.
	ctl *control.Client
	// oom counts OOM kills in the container's memory cgroup (nil: unknown).
	oom oomwatch.Counter
	// killed: the host killed the container; nothing can be copied back.
	killed atomic.Bool
	// discarded: the checkout's overlay was made (backends.DiscardReporter).
	discarded bool
}

func (s *sandbox) rt(args ...string) *exec.Cmd {
	return exec.Command(s.runtime, s.rtArgs(args...)...)
}

func (s *sandbox) rtArgs(args ...string) []string {
	return append(append([]string{"--root", s.b.runtimeRoot()}, s.traits.Flags...), args...)
}

// start runs the bundle and waits until the holder is up (and, with
// staged paths, has unpacked them, or awaits them when opts defer them).
func (s *sandbox) start(ctx context.Context, opts backends.StartOptions) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// The pid file names the container's first host process (under gVisor,
	// its kernel), whose memory cgroup is the sandbox's.
	args := []string{"run", "--bundle", s.dir, "--pid-file", filepath.Join(s.dir, "pid")}
	var holderEnd *os.File
	if s.traits.PassesFDs {
		// The holder's end of the control channel is its fd 3.
		host, holder, err := control.Pair()
		if err != nil {
			return err
		}
		if s.ctl, err = control.NewClient(host); err != nil {
			holder.Close()
			return err
		}
		holderEnd = holder
		defer holderEnd.Close()
		args = append(args, "--preserve-fds", "1")
	}
	s.oneShot = opts.OneShot
	s.detached = !opts.OneShot && detaches(s.traits) && becomeSubreaper()
	if s.detached {
		args = append(args, "--detach")
	}
	s.run = s.rt(append(args, s.id)...)
	if holderEnd != nil {
		s.run.ExtraFiles = []*os.File{holderEnd}
	}
	stdin, err := s.run.StdinPipe()
	if err != nil {
		return err
	}
	s.lifeline = stdin
	s.SetLifeline(stdin)
	s.run.Stdout, s.run.Stderr = &s.Out, &s.Out
	// Its own process group: a Ctrl-C at the terminal reaches triage-sandbox,
	// which closes the sandbox; the runtime is not killed under it.
	s.run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The grace period the runtime's move of the holder into its cgroups
	// would wait for in the middle of the start passes beside it instead.
	// Its end is not waited for: a start that fails at once may exit
	// while it still runs (a process's exit waits for it then, 13 ms at
	// most here).
	go func() {
		defer phase.Begin(ctx, "start.attach-grace")()
		_ = attachgrace.Pass()
	}()
	endSpawn := phase.Begin(ctx, "start.runtime-spawn")
	err = s.run.Start()
	endSpawn()
	if err != nil {
		return fmt.Errorf("starting %s: %w", filepath.Base(s.runtime), err)
	}
	go s.awaitHolder()
	endReady := phase.Begin(ctx, "start.holder-ready")
	err = s.Ready(ctx, opts)
	endReady()
	if err != nil {
		return err
	}
	// The OOM watch is set up once the holder is up, before any command.
	endOOM := phase.Begin(ctx, "start.oom-watch")
	s.oom = s.watchOOM(ctx)
	endOOM()
	return nil
}

// pidFileWait bounds the wait for the runtime's pid file.
const pidFileWait = 5 * time.Second

// watchOOM starts counting OOM kills in the container's memory cgroup, or
// returns nil. Without it a run still ends right; it only cannot say why
// a SIGKILL came. runc writes the pid file (atomically: a rename) as it
// lets the holder exec, so once the holder is ready the file is there (a
// Go program's start takes longer than that write): one read; a file not
// there yet is polled for every millisecond, within pidFileWait.
// Not waited for beside the start through an inotify watch of the bundle:
// closing an inotify instance waits in the kernel for its marks' release
// (an SRCU grace period, 12-20 ms here), and a close still under way at
// the CLI's exit held the exit back (by 2.7 ms in the median of 40 cold
// runs, up to 12 ms), more than the read here costs the start.
func (s *sandbox) watchOOM(ctx context.Context) oomwatch.Counter {
	pid := s.awaitPidFile(ctx)
	if pid <= 0 {
		return nil
	}
	c, err := oomwatch.ForPID(pid)
	if err != nil {
		return nil
	}
	return c
}

// awaitPidFile is the pid in the runtime's pid file, 0 when there is none
// within pidFileWait (or the sandbox ended, or ctx did).
func (s *sandbox) awaitPidFile(ctx context.Context) int {
	path := filepath.Join(s.dir, "pid")
	deadline := time.NewTimer(pidFileWait)
	defer deadline.Stop()
	for {
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0
		}
		// Empty: a runtime that writes it in place, caught between the
		// create and the write.
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 {
				return 0
			}
			return pid
		}
		select {
		case <-s.Gone:
			return 0
		case <-ctx.Done():
			return 0
		case <-deadline.C:
			return 0
		case <-time.After(time.Millisecond):
		}
	}
}

func (s *sandbox) ID() string                   { return s.id }
func (s *sandbox) Scratch() policy.ScratchPaths { return ScratchPaths }

// Exec implements backends.Sandbox.
func (s *sandbox) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if err := s.Admit(cmd, s.endedBefore); err != nil {
		return backends.Result{Sandbox: s.id}, err
	}
	res, err := s.execOnce(ctx, cmd, out)
	if err == nil && !s.traits.PassesFDs {
		s.copyBack(ctx, &res)
	}
	if err != nil {
		err = s.endedErr(err)
	}
	if s.oneShot && s.lifeline != nil {
		// Its one command is done and judged (an end of the holder now is
		// ours, not the command's): the holder's end and the runtime's
		// teardown overlap what the caller does before Close (the audit
		// record), which then mostly finds them done. Closing twice is
		// harmless (exec.Cmd's stdin pipe closes once).
		_ = s.lifeline.Close()
	}
	return res, err
}

// endedBefore explains a holder that ended before a command.
func (s *sandbox) endedBefore() error {
	return s.endedErr(errors.New("the sandbox ended before the command" + s.Said()))
}

// endedErr explains a run that broke off because the holder ended (err
// otherwise): by how `runtime run` ended, which is how its init, the
// holder, ended (holderexec.HolderEnd).
func (s *sandbox) endedErr(err error) error {
	if s.killed.Load() || !s.awaitExit(time.Second) {
		return err
	}
	end := holderexec.HolderEnd{Code: holderexec.CodeOf(s.endState()), KilledByHost: s.killed.Load(), Said: s.Out.Bytes(),
		Outside: "`" + filepath.Base(s.runtime) + " kill`, or a kill from the host"}
	if s.oom != nil {
		end.OOMKilled = s.oom.Kills(0) > 0
	}
	return end.Err()
}

// processFile writes the process of a helper whose argv argv encodes,
// its spec given runAs: the identity the helper takes itself under this
// runtime (launch.RunAs), nil when it starts as that identity.
func (s *sandbox) processFile(name string, argv func(runAs *protocol.Identity) []string) (string, error) {
	runAs, err := launch.RunAs(s.p, s.traits.HelpersStartAsRoot)
	if err != nil {
		return "", err
	}
	path := filepath.Join(s.dir, name)
	proc := process(s.p, argv(runAs))
	adaptToRuntime(proc, nil, s.traits, s.p)
	return path, writeJSON(path, proc)
}

// execProcessFile writes the supervisor's process for spec.
func (s *sandbox) execProcessFile(spec protocol.Exec) (string, error) {
	return s.processFile("exec.json", func(runAs *protocol.Identity) []string {
		spec.RunAs = runAs
		return launch.ExecArgv(spec)
	})
}

// exportProcessFile writes the exporter's process.
func (s *sandbox) exportProcessFile() (string, error) {
	return s.processFile("export.json", func(runAs *protocol.Identity) []string {
		spec := launch.ExportSpec(s.p)
		spec.RunAs = runAs
		return launch.ExportSpecArgv(spec)
	})
}

func (s *sandbox) execOnce(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	// A runtime that passes descriptors gives the holder a control channel
	// (s.ctl), and the copy back rides on the command's own start.
	run := holderexec.Run{Policy: s.p, Sandbox: (*ociSandbox)(s), Start: s.startByRuntime,
		ExportOnFD: s.traits.PassesFDs, Manifest: &s.Manifest, Seccomp: holderexec.SeccompFor(s.traits)}
	if s.oom != nil {
		run.OOMKills = s.oom.Kills
	}
	if s.ctl != nil {
		run.Start = holderexec.ByHolder(s.ctl)
	}
	return run.Exec(ctx, cmd, out)
}

// ociSandbox is the sandbox as holderexec sees it.
type ociSandbox sandbox

func (o *ociSandbox) ID() string   { return o.id }
func (o *ociSandbox) Kill()        { (*sandbox)(o).kill() }
func (o *ociSandbox) Killed() bool { return o.killed.Load() }

func (s *sandbox) kill() {
	s.killed.Store(true)
	_ = s.rt("kill", "--all", s.id, "KILL").Run()
}

// copyBack exports the staged writable paths and applies them to the host.
func (s *sandbox) copyBack(ctx context.Context, res *backends.Result) {
	gone := func() bool { return s.Ended() || s.killed.Load() }
	holderexec.CopyBack(ctx, s.p, gone, s.export, res)
}

// export runs the export in the sandbox with a runtime exec and applies
// its stream to the host.
func (s *sandbox) export(ctx context.Context, out []stage.Path) (*stage.Report, error) {
	procPath, err := s.exportProcessFile()
	if err != nil {
		return nil, err
	}
	x := exec.CommandContext(ctx, s.runtime, s.rtArgs("exec", "--process", procPath, s.id)...)
	stdout, err := x.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr holderexec.SmallBuffer
	x.Stderr = &stderr
	if err := x.Start(); err != nil {
		return nil, fmt.Errorf("copying the outputs back: %w", err)
	}
	m, rep, aerr := stage.Apply(ctx, stdout, s.Manifest, staging.StageSpec(s.p, staging.ExportPaths(s.p, out)))
	_, _ = io.Copy(io.Discard, stdout)
	werr := x.Wait()
	s.Manifest = m
	if werr != nil {
		return &rep, fmt.Errorf("copying the outputs back: the export in the sandbox failed (%v): %s", werr, strings.TrimSpace(stderr.String()))
	}
	return &rep, aerr
}

// Close implements backends.Sandbox: kill everything, delete the
// container and its bundle, and return once they are gone.
func (s *sandbox) Close(ctx context.Context) error {
	return s.CloseOnce(func() error {
		if s.lifeline != nil {
			_ = s.lifeline.Close()
		}
		// The network namespace's mount is released while the runtime
		// ends: the namespace lives on while a process is in it, and
		// the bundle (with its ownership record, for a sweep after a kill
		// -9 of this process) stays until everything below is done.
		netReleased := make(chan struct{})
		go func() {
			defer close(netReleased)
			_ = netup.Remove(filepath.Join(s.dir, netnsFile))
		}()
		// The cut lifeline makes the holder kill everything and exit, and a
		// foreground `runtime run` then deletes the container itself: the
		// usual close costs no runtime exec. Only a holder that does not go
		// is killed from outside.
		endExit := phase.Begin(ctx, "close.runtime-exit")
		if !s.awaitExit(closeGrace) {
			s.kill()
		}
		if s.run != nil && s.run.Process != nil {
			select {
			case <-s.Gone:
			case <-time.After(holderexec.AfterKillWait):
				_ = s.run.Process.Kill()
				if held := s.heldPid(); held > 0 {
					_ = syscall.Kill(held, syscall.SIGKILL)
				}
				<-s.Gone
			}
		}
		endExit()
		if s.ctl != nil {
			_ = s.ctl.Close()
		}
		if s.oom != nil {
			_ = s.oom.Close()
		}
		var errs []error
		if s.stateLeft() {
			endDelete := phase.Begin(ctx, "close.delete")
			if out, err := s.rt("delete", "--force", s.id).CombinedOutput(); err != nil && !strings.Contains(string(out), "not exist") {
				errs = append(errs, fmt.Errorf("deleting container %s: %v: %s", s.id, err, strings.TrimSpace(string(out))))
			}
			endDelete()
		}
		endRemove := phase.Begin(ctx, "close.bundle")
		// A release that failed is tried again, and reported, here.
		<-netReleased
		if err := removeBundle(s.dir); err != nil {
			errs = append(errs, err)
		}
		if s.release != nil {
			s.release()
		}
		endRemove()
		return errors.Join(errs...)
	})
}

// awaitExit waits up to d for `runtime run` to end; false if it did not.
func (s *sandbox) awaitExit(d time.Duration) bool {
	if s.run == nil || s.run.Process == nil {
		return false
	}
	select {
	case <-s.Gone:
		return true
	case <-time.After(d):
		return false
	}
}

// stateLeft: the runtime still keeps state for the container (it was
// killed from outside, or `runtime run` itself died), so it must be
// deleted. runsc keeps its state under the same --root.
func (s *sandbox) stateLeft() bool {
	if s.detached {
		// Nothing waits in the foreground to delete it.
		return true
	}
	if !s.killed.Load() && s.run != nil && s.run.ProcessState != nil && s.run.ProcessState.Exited() {
		if _, err := os.Lstat(filepath.Join(s.b.runtimeRoot(), s.id)); errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return true
}

// CheckoutDiscarded implements backends.DiscardReporter.
func (s *sandbox) CheckoutDiscarded() bool { return s.discarded }
