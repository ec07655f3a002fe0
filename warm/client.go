package warm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/hostprep"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/internal/progress"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	kmsg "github.com/triage-sandbox/triage-sandbox/protocol/keeper"
)

// keeperStart bounds how long a new keeper may take to start its sandbox.
const keeperStart = 60 * time.Second

// Backend starts sandboxes through a keeper when the policy asks for a
// session or a pool, and directly otherwise. Everything else is the
// wrapped backend's.
type Backend struct {
	backends.Backend
	// SelfExe runs the keeper; Dir holds keepers' sockets and records.
	SelfExe string
	Dir     string
	// Early, when set, is this run's connection to its session's keeper
	// begun ahead (DialEarly); Start takes it or closes it.
	Early *Early
}

var _ backends.Unwrapper = (*Backend)(nil)

// Unwrap implements backends.Unwrapper: the backend the keepers run.
func (b *Backend) Unwrap() backends.Backend { return b.Backend }

// Sweep implements backends.Backend: the wrapped backend's leftovers and
// dead keepers' records.
func (b *Backend) Sweep(ctx context.Context) ([]string, error) {
	removed, err := b.Backend.Sweep(ctx)
	more, err2 := Sweep(b.Dir)
	return append(removed, more...), errors.Join(err, err2)
}

// Attaches implements backends.Attacher: a session's or pool's sandbox is
// started, and swept beside, by its keeper.
func (b *Backend) Attaches(p *policy.Policy) bool {
	return p.Warm.Session != "" || p.Warm.Pool != 0
}

// Start implements backends.Backend.
func (b *Backend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	if p.Warm.Session == "" && p.Warm.Pool == 0 {
		b.Early.Close()
		return b.Backend.Start(ctx, p, opts)
	}
	endEarly := phase.Begin(ctx, "start.early")
	conn, h, ok := b.Early.take(ctx, b.Dir, p)
	endEarly()
	if ok {
		return &remote{conn: conn, h: h}, nil
	}
	if err := hostfs.PrivateDir(b.Dir); err != nil {
		return nil, fmt.Errorf("warm: the keepers' directory: %w", err)
	}
	pp := paths{b.Dir, key(p)}
	endLock := phase.Begin(ctx, "start.lock")
	unlock, err := lockFile(pp.lock())
	endLock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	var notes []string
	for attempt := 0; attempt < 2; attempt++ {
		endDial := phase.Begin(ctx, "start.dial")
		conn, h, err := dial(pp)
		endDial()
		if mismatch := (*protocol.MismatchError)(nil); errors.As(err, &mismatch) {
			// A keeper of another build holds the socket: it is told, not
			// replaced, as its sandbox may still run a command of its own.
			return nil, fmt.Errorf("warm: %w", err)
		}
		if err != nil {
			if conn, h, err = b.startKeeper(ctx, p, pp); err != nil {
				return nil, err
			}
		}
		if h.Error != "" {
			conn.Close()
			return nil, fmt.Errorf("warm: the keeper has no sandbox for this run: %s", h.Error)
		}
		if h.PolicyHash == p.WarmHash() {
			return &remote{conn: conn, h: h, notes: notes}, nil
		}
		// The policy changed: the old sandbox must not run this command.
		// (Files that appeared at the workspace root do not change it:
		// see policy.WarmHash.)
		notes = append(notes, fmt.Sprintf("%s: the policy changed (%s → %s); its sandbox was ended and a new one started",
			describe(p), short(h.PolicyHash), short(p.WarmHash())))
		endKeeper(pp, conn)
	}
	return nil, errors.New("warm: the keeper kept an old policy after it was told to end")
}

// startKeeper spawns p's keeper and attaches to it. Its first sandbox
// starts meanwhile (a pool's hello waits for one), so a terminal shows a
// progress line.
func (b *Backend) startKeeper(ctx context.Context, p *policy.Policy, pp paths) (net.Conn, hello, error) {
	rep := progress.From(ctx)
	rep.Step("starting %s: its keeper starts a sandbox", describe(p))
	defer rep.Done()
	if err := b.spawn(ctx, p, pp); err != nil {
		return nil, hello{}, err
	}
	conn, h, err := dial(pp)
	if err != nil {
		return nil, hello{}, fmt.Errorf("warm: the keeper started but does not answer: %w%s", err, logTail(pp.log()))
	}
	return conn, h, nil
}

func describe(p *policy.Policy) string {
	if p.Warm.Session != "" {
		return "session " + p.Warm.Session
	}
	return fmt.Sprintf("the %s pool", p.Role)
}

func short(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// endKeeper tells the keeper on conn to end and waits until its process
// is gone (its sandboxes removed, its socket no longer its own).
func endKeeper(pp paths, conn net.Conn) {
	rec, recErr := readRecord(pp.record())
	_ = writeFrame(conn, fEnd, nil)
	_ = conn.SetReadDeadline(time.Now().Add(keeperStart))
	_, _ = io.Copy(io.Discard, conn)
	conn.Close()
	if recErr != nil {
		return
	}
	if rec.Host != "" {
		// Its process is its host's, which outlives it: the host says
		// when it has ended.
		_ = endHosted(pp.dir, rec.Host, pp.k)
		return
	}
	for deadline := time.Now().Add(keeperStart); rec.Alive() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// dial attaches to a running keeper and reads its hello.
func dial(pp paths) (net.Conn, hello, error) {
	conn, err := net.Dial("unix", pp.socket())
	if err != nil {
		return nil, hello{}, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(keeperStart))
	t, b, err := readFrame(conn)
	_ = conn.SetReadDeadline(time.Time{})
	var h hello
	if err == nil && t != fHello {
		err = fmt.Errorf("warm: the keeper sent frame %d before its hello", t)
	}
	if err == nil {
		h, err = kmsg.DecodeHello("the keeper at "+pp.socket(), b)
	}
	if err != nil {
		conn.Close()
		return nil, hello{}, err
	}
	return conn, h, nil
}

// spawn has p's keeper started in this user's keeper host (host.go) of
// this binary and environment, starting that host first when none runs,
// and waits until the keeper listens. The caller holds the keeper's lock.
func (b *Backend) spawn(ctx context.Context, p *policy.Policy, pp paths) error {
	_ = os.Remove(pp.socket())
	// The keeper's log, fresh: the host appends to it, and a failure's
	// last line is shown from it (logTail).
	logf, err := hostfs.OpenNoFollow(pp.log(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	logf.Close()
	hp, err := b.hostPaths()
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		rep, err := b.askHost(ctx, hp, &kmsg.HostRequest{Op: kmsg.HostKeep, Policy: p})
		if err != nil {
			return err
		}
		if rep.Retry && attempt < 5 {
			continue // that host was ending: the next attempt starts another
		}
		if rep.Error != "" {
			return fmt.Errorf("warm: the keeper ended while starting: %s%s", rep.Error, logTail(pp.log()))
		}
		return nil
	}
}

// hostPaths are the files of this client's keeper host.
func (b *Backend) hostPaths() (hostPaths, error) {
	dir, err := filepath.Abs(b.Dir)
	if err != nil {
		return hostPaths{}, fmt.Errorf("warm: %w", err)
	}
	k, err := HostKey(b.SelfExe, os.Environ())
	if err != nil {
		return hostPaths{}, err
	}
	return hostPaths{dir, k}, nil
}

// askHost sends req to the host at hp, starting one when none answers,
// and reads its reply. A host that went away before its reply (it was
// ending) is a reply to retry.
func (b *Backend) askHost(ctx context.Context, hp hostPaths, req *kmsg.HostRequest) (kmsg.HostReply, error) {
	conn, err := dialHost(hp)
	if errors.Is(err, errNoHost) {
		conn, err = b.startHost(ctx, hp)
	}
	if err != nil {
		return kmsg.HostReply{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	rb, err := kmsg.Encode(req)
	if err != nil {
		return kmsg.HostReply{}, err
	}
	if err := writeHostFrame(conn, fHost, rb); err != nil {
		return kmsg.HostReply{Error: "the keeper host went away", Retry: true}, nil
	}
	_ = conn.SetReadDeadline(time.Now().Add(keeperStart + 10*time.Second))
	t, b2, err := readFrame(conn)
	if ctx.Err() != nil {
		return kmsg.HostReply{}, ctx.Err()
	}
	if err != nil {
		return kmsg.HostReply{Error: "the keeper host went away", Retry: true}, nil
	}
	if t != fHost {
		return kmsg.HostReply{}, fmt.Errorf("warm: the keeper host sent frame %d", t)
	}
	rep, err := kmsg.DecodeHostReply(b2)
	if err != nil {
		return kmsg.HostReply{}, fmt.Errorf("warm: %w", err)
	}
	return rep, nil
}

// writeHostFrame is writeFrame for a host request, whose policy may be over
// a keeper frame's bound (up to kmsg.MaxPolicy, as readHostRequest reads).
func writeHostFrame(w io.Writer, t byte, payload []byte) error {
	if len(payload) > kmsg.MaxPolicy {
		return fmt.Errorf("warm: a request of %d bytes is over the %d-byte bound", len(payload), kmsg.MaxPolicy)
	}
	b := make([]byte, 5, 5+len(payload))
	b[0] = t
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	_, err := w.Write(append(b, payload...))
	return err
}

// errNoHost: no host listens on the socket (none, or a dead one's file).
var errNoHost = errors.New("no keeper host")

func dialHost(hp hostPaths) (net.Conn, error) {
	conn, err := net.Dial("unix", hp.socket())
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil, errNoHost
	}
	if err != nil {
		return nil, fmt.Errorf("warm: the keeper host: %w", err)
	}
	return conn, nil
}

// startHost starts this client's keeper host, detached (its own session,
// so a Ctrl-C or the end of this run does not reach it), under the host's
// lock (a client that waited for it finds the host another started), and
// connects to it.
func (b *Backend) startHost(ctx context.Context, hp hostPaths) (net.Conn, error) {
	unlock, err := lockFile(hp.lock())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if conn, err := dialHost(hp); !errors.Is(err, errNoHost) {
		return conn, err
	}
	logf, err := hostfs.OpenNoFollow(hp.log(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("warm: %w", err)
	}
	defer logf.Close()
	argv, err := protocol.Argv(b.SelfExe, protocol.EntryKeeper, protocol.Keeper{Dir: hp.dir, Host: hp.k})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("warm: starting the keeper host: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.NewTimer(keeperStart)
	defer deadline.Stop()
	for {
		conn, err := dialHost(hp)
		if !errors.Is(err, errNoHost) {
			return conn, err
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("warm: the keeper host ended while starting%s", logTail(hp.log()))
		case <-deadline.C:
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("warm: the keeper host did not start within %s%s", keeperStart, logTail(hp.log()))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return ": " + lines[len(lines)-1]
}

func lockFile(path string) (func(), error) {
	f, err := hostfs.OpenNoFollow(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("warm: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("warm: locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// remote is a sandbox a keeper holds, as seen from `run`.
type remote struct {
	conn  net.Conn
	h     hello
	notes []string
	mu    sync.Mutex
	once  sync.Once
	// network are the last command's decisions, as its keeper's proxy
	// recorded them (the names are the sandbox's: the caller neutralises).
	network []egress.Decision
}

// NetworkDecisions are the network proxy's decisions on the last
// command's connections (an allow-list; the keeper holds the proxy).
func (r *remote) NetworkDecisions() []egress.Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.network
}

func (r *remote) ID() string                   { return r.h.ID }
func (r *remote) Scratch() policy.ScratchPaths { return r.h.Scratch }
func (r *remote) Warnings() []string {
	return append(append([]string(nil), r.notes...), r.h.Warnings...)
}

// CheckoutDiscarded implements backends.DiscardReporter.
func (r *remote) CheckoutDiscarded() bool { return r.h.CheckoutDiscarded }

// Close detaches: a session's sandbox stays for its next command, a pooled
// one is removed by its keeper.
func (r *remote) Close(context.Context) error {
	r.once.Do(func() { _ = r.conn.Close() })
	return nil
}

// Exec implements backends.Sandbox.
func (r *remote) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.network = nil
	if err := backends.CheckArgv(cmd.Argv); err != nil {
		return backends.Result{}, err
	}
	send := func(t byte, b []byte) error { return writeFrame(r.conn, t, b) }
	var sendMu sync.Mutex
	locked := func(t byte, b []byte) error { sendMu.Lock(); defer sendMu.Unlock(); return send(t, b) }
	b, err := kmsg.Encode(&request{Argv: cmd.Argv, Workdir: cmd.Workdir, Timeout: cmd.Timeout, HasStdin: cmd.Stdin != nil})
	if err != nil {
		return backends.Result{}, err
	}
	if err := locked(fRequest, b); err != nil {
		return backends.Result{}, fmt.Errorf("warm: sending the command: %w", err)
	}
	if cmd.Stdin != nil {
		go func() {
			_, _ = io.Copy(frameWriter{locked, fStdin}, cmd.Stdin)
			_ = locked(fStdinEOF, nil)
		}()
	}
	// Cancelling detaches: the keeper sees the connection go and kills the
	// command's tree.
	stop := context.AfterFunc(ctx, func() { _ = r.conn.Close() })
	defer stop()
	for {
		t, b, err := readFrame(r.conn)
		if err != nil {
			if ctx.Err() != nil {
				return backends.Result{Sandbox: r.h.ID, Canceled: true, ExitCode: 130}, nil
			}
			return backends.Result{Sandbox: r.h.ID}, fmt.Errorf("warm: the keeper went away during the command: %w", err)
		}
		switch t {
		case fStdout:
			if out.Stdout != nil {
				_, _ = out.Stdout.Write(b)
			}
		case fStderr:
			if out.Stderr != nil {
				_, _ = out.Stderr.Write(b)
			}
		case fResult:
			res, err := kmsg.DecodeResult(b)
			if err != nil {
				return backends.Result{Sandbox: r.h.ID}, fmt.Errorf("warm: unreadable result: %w", err)
			}
			r.network = res.Network
			if res.Error != "" {
				return res.Result, errors.New(res.Error)
			}
			return res.Result, nil
		default:
			return backends.Result{Sandbox: r.h.ID}, fmt.Errorf("warm: unexpected frame %d from the keeper", t)
		}
	}
}

// End tells the keeper of the named session in workspace/role to end,
// and waits until it has. It reports whether there was one.
func End(dir string, p *policy.Policy) (bool, error) {
	pp := paths{dir, key(p)}
	conn, _, err := dial(pp)
	if err != nil {
		return false, nil
	}
	endKeeper(pp, conn)
	return true, nil
}

// EndKeeper ends the keeper r (of dir, as List read it) describes: through
// its host, or, a keeper of its own process, with SIGTERM (it then removes its
// sandboxes, as at its idle end) and waits until its process is gone. It
// needs no connection: a pool hands every connection a sandbox, and one
// removed from the config has no policy left to reach it by. The record's
// process start time guards against a reused pid.
func EndKeeper(dir string, r Record) error {
	if !r.Alive() {
		return nil
	}
	if r.Host != "" {
		// A signal to PID would end its host's every keeper.
		return endHosted(dir, r.Host, r.ID)
	}
	if err := syscall.Kill(r.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("warm: ending the %s keeper (pid %d): %w", r.Kind, r.PID, err)
	}
	for deadline := time.Now().Add(keeperStart); r.Alive(); {
		if time.Now().After(deadline) {
			return fmt.Errorf("warm: the %s keeper (pid %d) did not end within %s", r.Kind, r.PID, keeperStart)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// endHosted asks the host of key hk in dir to end the keeper of key k, and
// waits until its sandboxes are removed. A host that is gone took it
// along.
func endHosted(dir, hk, k string) error {
	if !kmsg.ValidKey(k) {
		return fmt.Errorf("warm: %q is not a keeper's key", k)
	}
	hp := hostPaths{dir, hk}
	conn, err := dialHost(hp)
	if errors.Is(err, errNoHost) {
		return nil
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	b, err := kmsg.Encode(&kmsg.HostRequest{Op: kmsg.HostEnd, Key: k})
	if err != nil {
		return err
	}
	if err := writeHostFrame(conn, fHost, b); err != nil {
		return fmt.Errorf("warm: asking the keeper host to end %s: %w", k, err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(keeperStart + 10*time.Second))
	t, rb, err := readFrame(conn)
	if err != nil || t != fHost {
		return fmt.Errorf("warm: the keeper host did not say it ended %s (%v)", k, err)
	}
	rep, err := kmsg.DecodeHostReply(rb)
	if err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	if rep.Error != "" {
		return fmt.Errorf("warm: ending keeper %s: %s", k, rep.Error)
	}
	return nil
}

// KeepHere runs a keeper of p in this process until stop (which waits for
// its end: its sandboxes removed). It is for a caller whose context
// carries what no keeper process can be given: the selftest's canary hook
// for the network proxy (internal/egresstest), which only Go code passes
// and only in a context. Runs of p through b then attach to it as to any
// keeper. End and `session end` must not be used on it: its record names
// this process.
func (b *Backend) KeepHere(ctx context.Context, p *policy.Policy) (stop func(), err error) {
	if err := hostfs.PrivateDir(b.Dir); err != nil {
		return nil, fmt.Errorf("warm: the keepers' directory: %w", err)
	}
	// As a run does before it spawns a keeper: the writable paths exist
	// before the sandbox copies them.
	if err := hostprep.Writable(p); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Keep(ctx, KeeperOptions{Dir: b.Dir, Policy: p, Backend: b.Backend, Log: io.Discard})
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	record := paths{b.Dir, key(p)}.record()
	deadline := time.NewTimer(keeperStart)
	defer deadline.Stop()
	for {
		if r, err := readRecord(record); err == nil && r.PID == os.Getpid() {
			return stop, nil
		}
		select {
		case err := <-done:
			cancel()
			if err == nil {
				err = errors.New("it ended at once")
			}
			return nil, fmt.Errorf("warm: the keeper in this process did not start: %w", err)
		case <-deadline.C:
			stop()
			return nil, fmt.Errorf("warm: the keeper in this process did not start within %s", keeperStart)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// endAllAtOnce bounds how many keepers EndAll ends at once: each end
// removes its sandboxes, which the backend (the daemon, runc) does a few
// at a time anyway.
const endAllAtOnce = 8

// EndAll ends every live keeper recorded in dir, a few at once, and waits
// until each has; it returns those it ended.
func EndAll(dir string) ([]Record, error) {
	recs, err := List(dir)
	if err != nil {
		return nil, err
	}
	var (
		mu    sync.Mutex
		ended []Record
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, endAllAtOnce)
	)
	for _, r := range recs {
		if !r.Alive() {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			err := EndKeeper(dir, r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ended = append(ended, r)
		}()
	}
	wg.Wait()
	sort.Slice(ended, func(i, j int) bool { return ended[i].ID < ended[j].ID })
	return ended, errors.Join(errs...)
}
