//go:build unix

package seatbelt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// The runner is plain Unix process handling; only Start (start_darwin.go)
// makes it the backend's, with the real sandbox-exec and netstat. Tests on
// Linux drive it with stand-ins for both.

// hostOps are what the runner takes from macOS.
type hostOps struct {
	sandboxExec string                                   // what runs the profile: SandboxExec
	ports       func(ctx context.Context) ([]int, error) // the host's listening ports
}

// startBox makes the per-run directory (HOME, TMPDIR, the ownership
// record, each command's profile).
func (b *Backend) startBox(ctx context.Context, p *policy.Policy, opts backends.StartOptions, h hostOps) (*box, error) {
	if b.selfExe == "" {
		return nil, errors.New("the seatbelt backend needs the triage-sandbox binary to supervise its commands")
	}
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = backends.TTL(p, p.Timeout())
	}
	state, err := ensureStateDir(b.opts.StateDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(state, runPrefix)
	if err != nil {
		return nil, fmt.Errorf("making the run directory: %w", err)
	}
	s := &box{b: b, p: p, h: h, dir: dir, id: strings.TrimPrefix(filepath.Base(dir), runPrefix)}
	rec := owner{PID: os.Getpid(), Start: processStart(os.Getpid()), ExpiresAt: time.Now().Add(ttl).UTC(), Role: string(p.Role), Policy: p.ShortHash()}
	if err := s.prepare(ctx, rec); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// ensureStateDir makes the directory of per-run directories, refusing one
// another user owns or others can write (a planted /tmp path).
func ensureStateDir(dir string) (string, error) {
	if err := hostfs.PrivateDir(dir); err != nil {
		return "", fmt.Errorf("%w (it holds the sandboxes' HOME and TMPDIR)", err)
	}
	return dir, nil
}

// box is a per-run directory. Each command takes the shared command flow
// (holderexec: start gate, timeout, cancellation) with this binary's exec
// helper, the shared supervisor, started on the host: its process group is
// the command's tree and its stdin, without input, the lifeline that ends
// that tree if triage-sandbox dies. The helper runs sandbox-exec with the
// profile rendered for that command.
type box struct {
	b       *Backend
	p       *policy.Policy
	h       hostOps
	dir, id string
	scratch policy.ScratchPaths

	// mu: one command at a time; n numbers their profile files.
	mu sync.Mutex
	n  int

	helperMu sync.Mutex
	helper   *os.Process // the running command's supervisor
	killed   bool

	exited    chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error
}

func (s *box) ID() string                   { return "seatbelt-" + s.id }
func (s *box) Scratch() policy.ScratchPaths { return s.scratch }
func (s *box) Warnings() []string           { return nil }

// prepare writes the ownership record, makes HOME and TMPDIR, and renders
// once so a policy the renderer refuses fails at start.
func (s *box) prepare(ctx context.Context, rec owner) error {
	s.exited = make(chan struct{})
	if err := writeOwner(s.dir, rec); err != nil {
		return fmt.Errorf("writing the ownership record: %w", err)
	}
	for _, d := range []struct {
		name string
		mode uint32
	}{{homeDir, s.p.Scratch.HomeMode}, {tmpDir, s.p.Scratch.TmpMode}} {
		path := filepath.Join(s.dir, d.name)
		if err := os.Mkdir(path, 0o700); err != nil {
			return fmt.Errorf("making the run's %s: %w", d.name, err)
		}
		mode := os.FileMode(d.mode & 0o777)
		if d.mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("making the run's %s: %w", d.name, err)
		}
	}
	art, err := s.render(ctx, backends.Command{Argv: []string{"true"}}, "")
	if err != nil {
		return err
	}
	s.scratch = art.Scratch
	return nil
}

func (s *box) render(ctx context.Context, cmd backends.Command, profilePath string) (*Artifact, error) {
	ports, err := s.h.ports(ctx)
	if err != nil {
		return nil, err
	}
	art, err := Render(s.p, cmd, Input{Canon: s.b.canon, RunID: s.id, RunDir: s.dir, Self: s.b.selfExe,
		HostPorts: ports, OptIns: s.b.opts.OptIns, ProfilePath: profilePath})
	if err == nil {
		art.Argv[0] = s.h.sandboxExec
	}
	return art, err
}

// Exec implements backends.Sandbox.
func (s *box) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := backends.Result{Sandbox: s.ID()}
	if s.ended() {
		return res, errors.New("the sandbox is closed")
	}
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return res, err
	}
	// 127 and 126 before sandbox-exec, as the container backends give them.
	if code, msg := resolve(cmd.Argv[0], s.p.EnvList(s.scratch), s.p.Workdir); code != 0 {
		if out.Stderr != nil {
			fmt.Fprintf(out.Stderr, "triage-sandbox: %s\n", msg)
		}
		res.ExitCode = code
		return res, nil
	}
	return holderexec.Run{Policy: s.p, Sandbox: s, Start: s.start}.Exec(ctx, cmd, out)
}

// start implements holderexec.Starter: the supervisor is this binary on
// the host and its command is sandbox-exec with the profile rendered for
// the spec's command now.
func (s *box) start(ctx context.Context, spec protocol.Exec, gate *holderexec.OutputHold, exportW *os.File) (*holderexec.Started, error) {
	if exportW != nil || spec.ExportFD != 0 {
		return nil, fmt.Errorf("seatbelt: the supervisor exports nothing here (no staged paths)")
	}
	s.n++
	profilePath := filepath.Join(s.dir, fmt.Sprintf("profile-%d.sb", s.n))
	art, err := s.render(ctx, backends.Command{Argv: spec.Argv}, profilePath)
	if err != nil {
		return nil, err
	}
	if err := writeProfile(profilePath, art.Profile); err != nil {
		return nil, err
	}
	spec.Argv, spec.Rlimits = art.Argv, art.Rlimits
	argv, err := protocol.Argv(s.b.selfExe, protocol.EntryExec, spec)
	if err != nil {
		return nil, err
	}
	x := exec.Command(argv[0], argv[1:]...)
	x.Env, x.Dir = art.Env, s.p.Workdir
	x.Stdout, x.Stderr = gate.Stdout(), gate.Stderr()
	// Its own process group: a Ctrl-C at the terminal reaches triage-sandbox,
	// which then ends the command through the helper.
	x.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := x.StdinPipe()
	if err == nil {
		err = x.Start()
	}
	if err != nil {
		_ = os.Remove(profilePath)
		return nil, fmt.Errorf("starting the supervisor %s: %w", s.b.selfExe, err)
	}
	s.helperMu.Lock()
	s.helper = x.Process
	s.helperMu.Unlock()
	wait := func() error {
		err := x.Wait()
		_ = os.Remove(profilePath)
		s.helperMu.Lock()
		s.helper = nil
		s.helperMu.Unlock()
		return holderexec.ExitOf(err)
	}
	return &holderexec.Started{Stdin: stdin, Wait: wait}, nil
}

// writeProfile writes the profile to a new 0600 file that no one else
// could have prepared (the run directory is 0700 and the name fresh).
func writeProfile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing the profile: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("writing the profile: %w", err)
	}
	return f.Close()
}

// Exited implements holderexec.Sandbox: closed once the sandbox is closed.
func (s *box) Exited() <-chan struct{} { return s.exited }

func (s *box) ended() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// Kill implements holderexec.Sandbox: the supervisor ends the command's
// tree on SIGTERM (TERM, its grace, KILL); if it does not go, it is killed.
func (s *box) Kill() {
	s.helperMu.Lock()
	defer s.helperMu.Unlock()
	s.killed = true
	if s.helper == nil {
		return
	}
	h := s.helper
	_ = h.Signal(syscall.SIGTERM)
	time.AfterFunc(s.p.Lifetime.KillGrace+2*time.Second, func() { _ = h.Kill() })
}

// Killed implements holderexec.Sandbox.
func (s *box) Killed() bool {
	s.helperMu.Lock()
	defer s.helperMu.Unlock()
	return s.killed
}

// Said implements holderexec.Sandbox: the helper's own words reach the
// start gate, nothing else speaks.
func (s *box) Said() string { return "" }

// Close implements backends.Sandbox: a command still running is ended
// (its supervisor ends its tree), then the run directory is removed.
func (s *box) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		close(s.exited)
		s.Kill()
		s.mu.Lock() // the running Exec, if any, has returned
		defer s.mu.Unlock()
		if err := os.RemoveAll(s.dir); err != nil {
			s.closeErr = fmt.Errorf("removing the run directory %s: %w (triage-sandbox gc removes it later)", s.dir, err)
		}
	})
	return s.closeErr
}
