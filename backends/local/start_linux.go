package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holder"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/oomwatch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/inside/confine"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
)

const (
	startTimeout = 30 * time.Second
	closeGrace   = 3 * time.Second
)

type sandbox struct {
	*holder.Base
	b   *Backend
	p   *policy.Policy
	id  string
	dir string

	helper   *exec.Cmd
	lifeline io.WriteCloser
	ctl      *control.Client
	cg       *cgroup
	// oom counts OOM kills in the sandbox's cgroup (nil: none to watch).
	oom    oomwatch.Counter
	killed atomic.Bool
}

// Start implements backends.Backend.
func (b *Backend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	if b.selfExe == "" {
		return nil, errors.New("the local backend needs the static triage-sandbox binary")
	}
	if _, err := launch.EgressSource(p, true); err != nil {
		return nil, err
	}
	endPlan := phase.Begin(ctx, "start.render")
	pl, err := Plan(p, b.selfExe)
	if err != nil {
		return nil, err
	}
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = backends.TTL(p, p.Timeout())
	}
	id := newID()
	dir, err := b.newStateDir(id)
	if err != nil {
		return nil, err
	}
	s := &sandbox{b: b, p: p, id: id, dir: dir, Base: holder.New(p, holder.Config{Noun: "the local sandbox", Setup: startTimeout})}
	mapOwners(&pl, p, dir)
	endPlan()
	if os.Geteuid() == 0 && cgroupsUsable() == nil {
		endCgroup := phase.Begin(ctx, "start.cgroup")
		s.cg, err = newCgroup(id, p.Limits)
		endCgroup()
		if err != nil {
			_ = removeStateDir(s.dir)
			return nil, err
		}
	} else if p.Limits.Pids > 0 {
		pl.Rlimits = append(pl.Rlimits, confine.Rlimit{Name: "NPROC", Soft: uint64(p.Limits.Pids), Hard: uint64(p.Limits.Pids)})
	}
	if err := s.start(ctx, pl, ttl, opts); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		// The helper needs every layer and refuses to run without one (its
		// clone makes the namespaces, Restrict loads Landlock at the plan's
		// ABI and the seccomp filter), so the probe, a fork of its own,
		// runs only to name the layer that is missing.
		if err := b.Available(ctx); err != nil {
			return nil, err
		}
		return nil, err
	}
	return s, nil
}

// newStateDir makes the sandbox's own directory of records, a new one in
// the backend's state directory (which must be the caller's alone).
func (b *Backend) newStateDir(id string) (string, error) {
	if err := hostfs.PrivateDir(b.stateDir); err != nil {
		return "", fmt.Errorf("the local sandboxes' state: %w", err)
	}
	dir := filepath.Join(b.stateDir, id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("the local sandbox's state: %w", err)
	}
	return dir, nil
}

func newID() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return "triage-sandbox-local-" + hex.EncodeToString(r[:])
}

// start runs the helper and waits until it holds the sandbox (with its
// staged copy in place, or awaiting it when opts defer it).
func (s *sandbox) start(ctx context.Context, pl confine.Plan, ttl time.Duration, opts backends.StartOptions) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	endPrepare := phase.Begin(ctx, "start.prepare")
	files, err := s.prepareHelper(ctx, ttl)
	if err != nil {
		return err
	}
	defer files.close()
	// The plan is in the pipe before the helper starts, so the helper
	// builds the sandbox while this side records it and sets its cgroup
	// (a pipe holds 64 KiB; a larger plan is written as it reads).
	sent := make(chan error, 1)
	go func() {
		err := json.NewEncoder(files.planW).Encode(pl)
		files.planW.Close()
		sent <- err
	}()
	endPrepare()
	endFork := phase.Begin(ctx, "start.helper-exec")
	f, err := s.forkHelper()
	if err != nil {
		return err
	}
	endFork()
	if files.traceR != nil {
		defer s.relayTrace(ctx, files)()
	}
	endPlan := phase.Begin(ctx, "start.plan")
	if err := s.settle(ttl, f.inGroup); err != nil {
		return err
	}
	if err := <-sent; err != nil {
		return fmt.Errorf("sending the plan to the helper: %w%s", err, s.Said())
	}
	endPlan()
	defer phase.Begin(ctx, "start.holder-ready")()
	return s.Ready(ctx, opts)
}

// helperFiles are this side's ends of the helper's descriptors, and the
// copies it hands the helper; the start closes them when it returns (the
// plan's writer is closed once the plan is written).
type helperFiles struct {
	planR, planW, holder, traceR, traceW *os.File
}

func (f *helperFiles) close() {
	for _, x := range []*os.File{f.planR, f.holder, f.traceR, f.traceW} {
		if x != nil {
			_ = x.Close()
		}
	}
}

// prepareHelper lays out the helper's command: its descriptors, each named
// in its spec (the plan's pipe, the control channel, and the trace's pipe
// while the run is traced), its environment, identity and lifeline.
func (s *sandbox) prepareHelper(ctx context.Context, ttl time.Duration) (*helperFiles, error) {
	attr, err := confine.Namespaces(s.p.User.UID, s.p.User.GID, os.Geteuid(), os.Getegid())
	if err != nil {
		return nil, err
	}
	f := &helperFiles{}
	fail := func(err error) (*helperFiles, error) {
		f.close()
		f.planW.Close()
		return nil, err
	}
	if f.planR, f.planW, err = os.Pipe(); err != nil {
		return nil, err
	}
	host, holderEnd, err := control.Pair()
	if err != nil {
		return fail(err)
	}
	f.holder = holderEnd
	if s.ctl, err = control.NewClient(host); err != nil {
		return fail(err)
	}
	var fds protocol.Donation
	hold := launch.HoldSpec(s.p, ttl)
	hold.ControlFD = fds.Add(f.holder)
	spec := protocol.Local{PlanFD: fds.Add(f.planR), Hold: hold}
	// While this run is traced, the helper sends its own phases back.
	if phase.From(ctx) != nil {
		if f.traceR, f.traceW, err = os.Pipe(); err != nil {
			return fail(err)
		}
		spec.TraceFD = fds.Add(f.traceW)
	}
	args, err := protocol.Argv(s.b.selfExe, protocol.EntryLocal, spec)
	if err != nil {
		return fail(err)
	}
	// The holder's environment is the one its commands inherit.
	s.helper = &exec.Cmd{Path: s.b.selfExe, Args: args, Dir: "/", Env: s.p.EnvList(ScratchPaths),
		ExtraFiles: fds.Files(), SysProcAttr: attr}
	s.helper.Stdout, s.helper.Stderr = &s.Out, &s.Out
	stdin, err := s.helper.StdinPipe()
	if err != nil {
		return fail(err)
	}
	s.lifeline = stdin
	s.SetLifeline(stdin)
	return f, nil
}

// forked is how the helper's start went: began (a process exists) and
// inGroup (born in the sandbox's cgroup).
type forked struct {
	began, inGroup bool
}

// forkHelper starts the helper. Pdeathsig follows the thread that forked
// the helper: it is forked from a locked thread that lives as long as the
// sandbox, which then waits for it and marks the holder gone.
func (s *sandbox) forkHelper() (forked, error) {
	type result struct {
		forked
		err error
	}
	started := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var r result
		if s.cg != nil {
			r.inGroup, r.err = s.cg.startInside(s.helper.Start)
		}
		if !r.inGroup {
			r.err = s.helper.Start()
		}
		if !errors.Is(r.err, errStranded) {
			// A thread left in the sandbox's groups ends with this
			// goroutine instead.
			defer runtime.UnlockOSThread()
		}
		r.began = s.helper.Process != nil
		started <- r
		if !r.began {
			return
		}
		_ = s.helper.Wait()
		close(s.Gone)
	}()
	r := <-started
	if r.err == nil {
		return r.forked, nil
	}
	if !r.began {
		close(s.Gone)
	}
	if errors.Is(r.err, errStranded) {
		return r.forked, r.err
	}
	return r.forked, fmt.Errorf("starting the local sandbox's helper: %w (%s)", r.err, namespaceHint())
}

// relayTrace passes the helper's phases on to this run's trace; what it
// returns waits (a second at most) for the relay to end. The helper closes
// its end before it holds; one that failed earlier is gone, which closes
// it too.
func (s *sandbox) relayTrace(ctx context.Context, files *helperFiles) func() {
	_ = files.traceW.Close()
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		phase.Relay(ctx, files.traceR, "helper", s.helper.Process.Pid)
	}()
	return func() {
		select {
		case <-relayed:
		case <-time.After(time.Second):
		}
	}
}

// settle records the started helper for the sweep and puts it in the
// sandbox's cgroup and OOM watch.
func (s *sandbox) settle(ttl time.Duration, inGroup bool) error {
	if err := s.record(ttl); err != nil {
		return err
	}
	if s.cg == nil {
		return nil
	}
	// Born in its cgroup (see startInside), or moved in here before it
	// forks or fills a tmpfs: it forks nothing before a command is asked
	// of it and unpacks nothing before the staged copy comes, both sent
	// after this.
	if !inGroup {
		if err := s.cg.add(s.helper.Process.Pid); err != nil {
			return err
		}
	}
	if c, err := oomwatch.ForPID(s.helper.Process.Pid); err == nil {
		s.oom = c
	}
	return nil
}

// record writes the ownership record a sweep judges by.
func (s *sandbox) record(ttl time.Duration) error {
	rec := owner{PID: os.Getpid(), Start: ownership.ProcessStart(os.Getpid()),
		Helper: s.helper.Process.Pid, HelperAt: ownership.ProcessStart(s.helper.Process.Pid),
		ExpiresAt: time.Now().Add(ttl).UTC(), Role: string(s.p.Role), Policy: s.p.ShortHash()}
	if s.cg != nil {
		rec.Cgroups = s.cg.dirs
	}
	raw, err := json.Marshal(rec)
	if err == nil {
		err = os.WriteFile(filepath.Join(s.dir, "owner.json"), raw, 0o600)
	}
	if err != nil {
		return fmt.Errorf("recording the local sandbox's owner: %w", err)
	}
	return nil
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
	run := holderexec.Run{Policy: s.p, Sandbox: (*localSandbox)(s), Start: holderexec.ByHolder(s.ctl),
		ExportOnFD: true, Manifest: &s.Manifest}
	if s.oom != nil {
		run.OOMKills = s.oom.Kills
	}
	res, err := run.Exec(ctx, cmd, out)
	if err != nil {
		err = s.endedErr(err)
	}
	return res, err
}

// endedBefore explains a helper that ended before a command.
func (s *sandbox) endedBefore() error {
	return s.endedErr(errors.New("the sandbox ended before the command" + s.Said()))
}

// endedErr explains a run that broke off because the helper, the holder,
// ended (err otherwise), by how it ended (holderexec.HolderEnd).
func (s *sandbox) endedErr(err error) error {
	if s.killed.Load() || s.helper == nil {
		return err
	}
	select {
	case <-s.Gone:
	case <-time.After(time.Second):
		return err
	}
	end := holderexec.HolderEnd{Code: holderexec.CodeOf(s.helper.ProcessState), KilledByHost: s.killed.Load(), Said: s.Out.Bytes(),
		Outside: "a kill of its helper from the host"}
	if s.oom != nil {
		end.OOMKilled = s.oom.Kills(0) > 0
	}
	return end.Err()
}

// localSandbox is the sandbox as holderexec sees it.
type localSandbox sandbox

func (l *localSandbox) ID() string   { return l.id }
func (l *localSandbox) Kill()        { (*sandbox)(l).kill() }
func (l *localSandbox) Killed() bool { return l.killed.Load() }

// kill ends the helper, the pid namespace's init: the kernel kills every
// other process in the namespace with it.
func (s *sandbox) kill() {
	s.killed.Store(true)
	if s.helper != nil && s.helper.Process != nil {
		_ = s.helper.Process.Kill()
	}
}

// Close implements backends.Sandbox.
func (s *sandbox) Close(ctx context.Context) error {
	return s.CloseOnce(func() error {
		endHelper := phase.Begin(ctx, "close.helper")
		if s.lifeline != nil {
			_ = s.lifeline.Close() // the holder kills everything and exits
		}
		if s.helper != nil && s.helper.Process != nil {
			select {
			case <-s.Gone:
			case <-time.After(closeGrace):
				s.kill()
				<-s.Gone
			}
		}
		if s.ctl != nil {
			_ = s.ctl.Close()
		}
		if s.oom != nil {
			_ = s.oom.Close()
		}
		endHelper()
		defer phase.Begin(ctx, "close.cgroup")()
		var errs []error
		if s.cg != nil {
			if err := s.cg.remove(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := removeStateDir(s.dir); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

// namespaceHint says what to change when the helper cannot start.
func namespaceHint() string {
	if raw, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(raw)) == "1" {
		return "AppArmor forbids unprivileged user namespaces here: sysctl kernel.apparmor_restrict_unprivileged_userns=0, or run as root"
	}
	if raw, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(raw)) == "0" {
		return "unprivileged user namespaces are off: sysctl kernel.unprivileged_userns_clone=1, or run as root"
	}
	return "the kernel refused new namespaces; see `triage-sandbox doctor`"
}

// CheckoutDiscarded implements backends.DiscardReporter: the helper makes
// the checkout's overlay, or the sandbox does not start.
func (s *sandbox) CheckoutDiscarded() bool { return overlay.Wanted(s.p) }

// mapOwners: root runs the sandbox as another identity than a discarded
// directory's owner (a root-owned checkout in CI): the helper's user
// namespace maps only the sandbox's ids, so it would see the owner's files
// as nobody's. The directory is bound from a read-only view, made here in
// the host's namespace (only root there can), in which the owner's files
// are the sandbox's; the helper's overlay takes it as its lower layer.
// Without such a view the directory is bound as it is.
func mapOwners(pl *confine.Plan, p *policy.Policy, dir string) {
	for i, b := range pl.Binds {
		if b.Discard == nil {
			continue
		}
		target := filepath.Join(dir, mappedPrefix+strconv.Itoa(i))
		if overlay.MapOwner(b.Source, target, [2]int{p.User.UID, p.User.GID}) {
			pl.Binds[i].Target, pl.Binds[i].Source = b.Dest(), target
		}
	}
}
