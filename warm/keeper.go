package warm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/phase"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	kmsg "github.com/triage-sandbox/triage-sandbox/protocol/keeper"
	"github.com/triage-sandbox/triage-sandbox/runproxy"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

// sessionLifetime bounds a session's sandbox whatever else happens (its
// holder's TTL); idle expiry normally ends it long before.
const sessionLifetime = 12 * time.Hour

// KeeperOptions configure the keeper process.
type KeeperOptions struct {
	Dir     string
	Policy  *policy.Policy
	Backend backends.Backend
	Log     io.Writer
	// Fast, when set, runs a front's `run` in this process (package
	// warm/fastpath): writing what `run` writes on stdout and stderr, it
	// returns `run`'s exit code, or a reason to fall back when nothing ran.
	// A session's keeper serves it on its socket, a pool's on its front
	// socket (poolfast.go); here is the backend its `run` attaches
	// through, to this keeper's sandbox (a pool's: one taken for it) in
	// this process.
	Fast func(ctx context.Context, req fastpath.Request, here *Here, stdout, stderr io.Writer) (code int, fallback string)
	// Host is the key of the keeper host this keeper runs in (host.go),
	// written in its record; empty for a keeper of its own process.
	Host string
	// Ready, when set, is called once the keeper listens and its record
	// is written: its host then answers the client that asked for it.
	Ready func()
	// Sweeping, when set, is shared by a host's keepers: one sweep at a
	// time for all of them (each sweeps every dead owner's leftovers, so
	// a sweep under way covers the starts of the others too); otherwise
	// the keeper's own.
	Sweeping *atomic.Bool
}

type keeper struct {
	o      KeeperOptions
	p      *policy.Policy
	paths  paths
	logger *log.Logger

	active   atomic.Int32
	lastUsed atomic.Int64 // unix nanoseconds
	stop     context.CancelFunc
	// touched asks keepRecord to write Busy and LastUsed to the record.
	touched chan struct{}
	// since is its record's, which tells it from a successor's of the
	// same key in the same process (a host's keepers share its pid).
	since time.Time

	// warmHash is p's, and mineHashed keepingHashed(p): computed once, as
	// p never changes.
	warmHash   string
	mineHashed func(p *policy.Policy, warmHash string) bool

	// session: its one sandbox, one command at a time.
	session backends.Sandbox
	execMu  sync.Mutex

	// pool: started sandboxes ready for one command each; slots bounds
	// how many exist at once (ready, in use or being removed).
	ready    chan backends.Sandbox
	slots    chan struct{}
	closing  sync.WaitGroup
	refilled chan struct{}

	// The sweep beside this keeper's starts (the runs that attach here
	// sweep nothing): one at a time.
	sweeping *atomic.Bool
	sweeps   sync.WaitGroup

	// proxies are the network proxies of the sandboxes this keeper holds
	// (an allow-list), by sandbox id: see startSandbox.
	proxyMu sync.Mutex
	proxies map[string]*runproxy.Proxy
}

// recoverPanic, deferred first in each goroutine of a keeper, turns a
// panic into this keeper's clean end (its sandboxes removed, its record
// and socket too), logged with its stack: in a host, one keeper's fault
// must not end the others' sessions with it.
func (k *keeper) recoverPanic(what string) {
	if r := recover(); r != nil {
		k.logger.Printf("panic in %s: %v; ending this keeper\n%s", what, r, debug.Stack())
		k.stop()
	}
}

// sweepWait bounds how long a keeper's end waits for its last sweep.
const sweepWait = 10 * time.Second

// Keep runs the keeper until it ends: idle past the policy's expiry, told
// to end, or signalled. It removes every sandbox it started before it
// returns, and its socket and record.
func Keep(ctx context.Context, o KeeperOptions) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	return keep(ctx, o)
}

// keep is Keep without the signals: a host's keepers end by its context.
func keep(ctx context.Context, o KeeperOptions) error {
	p := o.Policy
	if p.Warm.Session == "" && p.Warm.Pool == 0 {
		return errors.New("warm: the policy asks for neither a session nor a pool")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k := newKeeper(o, cancel)
	defer k.awaitSweeps()
	k.sweepBeside(ctx)
	release, err := k.holdSandboxes(ctx, cancel)
	if err != nil {
		return err
	}
	defer release()
	ln, unlisten, err := k.listen()
	if err != nil {
		return err
	}
	defer unlisten()
	rec, err := k.writeRecord()
	if err != nil {
		return err
	}
	// The record's last write comes before its removal above: a late one
	// could land on a successor's record.
	rctx, endRecord := context.WithCancel(ctx)
	recorded := make(chan struct{})
	go func() { defer close(recorded); defer k.recoverPanic("keeping the record"); k.keepRecord(rctx, rec) }()
	defer func() { endRecord(); <-recorded }()
	// A pool's fronts have a socket of their own (poolfast.go), listening
	// before the host answers the client that asked for this keeper.
	if front, err := k.listenFront(); err != nil {
		return err
	} else if front != nil {
		served := make(chan struct{})
		defer func() { cancel(); <-served; front.unlisten() }()
		go func() { <-ctx.Done(); _ = front.ln.Close() }()
		go func() { defer close(served); _ = k.accept(ctx, front.ln, k.serveFront) }()
	}
	if o.Ready != nil {
		o.Ready()
	}
	go func() { defer k.recoverPanic("the idle expiry"); k.expire(ctx) }()
	go func() { <-ctx.Done(); _ = ln.Close() }()
	return k.accept(ctx, ln, k.serve)
}

// holdSandboxes starts the session's sandbox, or the pool's filling; the
// release it returns removes them (the pool once its filling stopped).
func (k *keeper) holdSandboxes(ctx context.Context, cancel context.CancelFunc) (release func(), err error) {
	if k.p.Warm.Session != "" {
		sb, err := k.startSandbox(ctx, backends.StartOptions{TTL: sessionLifetime})
		if err != nil {
			return nil, fmt.Errorf("starting the session's sandbox: %w", err)
		}
		k.session = sb
		return func() { _ = k.closeSandbox(context.WithoutCancel(ctx), sb) }, nil
	}
	if cp, ok := k.o.Backend.(backends.ClusterPool); ok {
		releasePool, kept, err := cp.KeepPool(ctx, k.p, k.pooledTTL())
		if err != nil {
			return nil, fmt.Errorf("starting the pool: %w", err)
		}
		if kept {
			// The cluster keeps the pool started: each take is a Start
			// (a claim of one of its sandboxes), staged, run, discarded.
			k.ready = make(chan backends.Sandbox)
			return func() {
				cancel()
				k.closing.Wait()
				if err := releasePool(context.WithoutCancel(ctx)); err != nil {
					k.logger.Printf("removing the pool: %v", err)
				}
			}, nil
		}
	}
	// The pool is drained once fill has stopped: a start still under way
	// when the keeper ends puts its sandbox in the pool first.
	var filling sync.WaitGroup
	filling.Add(1)
	go func() {
		defer filling.Done()
		defer k.recoverPanic("filling the pool")
		k.fill(ctx)
	}()
	return func() {
		cancel()
		filling.Wait()
		k.drainPool(context.WithoutCancel(ctx))
	}, nil
}

// listen listens on the keeper's socket, its own user's only; unlisten
// removes the socket, and the record and log of a clean end, only while
// they are still this keeper's: a successor may already have taken the
// names while this one finished removing its sandboxes.
func (k *keeper) listen() (ln net.Listener, unlisten func(), err error) {
	_ = os.Remove(k.paths.socket()) // a dead keeper's
	if ln, err = net.Listen("unix", k.paths.socket()); err != nil {
		return nil, nil, fmt.Errorf("warm: listening: %w", err)
	}
	mine, err := os.Stat(k.paths.socket())
	if err != nil {
		return nil, nil, err
	}
	unlisten = func() {
		if fi, err := os.Stat(k.paths.socket()); err == nil && os.SameFile(fi, mine) {
			_ = os.Remove(k.paths.socket())
		}
		if r, err := readRecord(k.paths.record()); err == nil && r.PID == os.Getpid() && r.Since.Equal(k.since) {
			_ = os.Remove(k.paths.record())
			_ = os.Remove(k.paths.log()) // a clean end: nothing to read there
		}
	}
	if err := os.Chmod(k.paths.socket(), 0o600); err != nil {
		unlisten()
		return nil, nil, err
	}
	return ln, unlisten, nil
}

// writeRecord writes the keeper's record: what it keeps, for whom, since
// when.
func (k *keeper) writeRecord() (Record, error) {
	p := k.p
	now := time.Now().UTC()
	rec := Record{Kind: KindPool, Name: PoolName(p.Role), Workspace: p.WorkspaceRoot, Role: p.Role, Backend: p.Backend,
		Policy: p.Hash(), PID: os.Getpid(), Start: ownership.ProcessStart(os.Getpid()), Since: now,
		WarmIdle: p.Warm.Idle.String(), LastUsed: now, Pool: p.Warm.Pool, Host: k.o.Host}
	k.since = now
	if p.Warm.Session != "" {
		rec.Kind, rec.Name = KindSession, p.Warm.Session
	}
	return rec, writeRecord(k.paths.record(), rec)
}

// accept serves each connection until the keeper ends, and returns once
// every one is served.
func (k *keeper) accept(ctx context.Context, ln net.Listener, serve func(context.Context, net.Conn)) error {
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("warm: accepting: %w", err)
		}
		k.active.Add(1)
		k.touch()
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer func() { k.active.Add(-1); k.lastUsed.Store(time.Now().UnixNano()); k.touch() }()
			defer k.recoverPanic("serving a connection")
			serve(ctx, conn)
		}()
	}
}

// newKeeper is a keeper for o's policy, not started: a pool's channels
// are made, its sandboxes are not.
func newKeeper(o KeeperOptions, stop context.CancelFunc) *keeper {
	p := o.Policy
	k := &keeper{o: o, p: p, paths: paths{o.Dir, key(p)}, logger: log.New(o.Log, "", log.LstdFlags), stop: stop,
		touched: make(chan struct{}, 1), proxies: map[string]*runproxy.Proxy{}}
	k.lastUsed.Store(time.Now().UnixNano())
	k.warmHash, k.mineHashed = p.WarmHash(), keepingHashed(p)
	if k.sweeping = o.Sweeping; k.sweeping == nil {
		k.sweeping = new(atomic.Bool)
	}
	if p.Warm.Session == "" {
		k.ready = make(chan backends.Sandbox, p.Warm.Pool)
		k.slots = make(chan struct{}, 2*p.Warm.Pool)
		k.refilled = make(chan struct{}, 1)
	}
	return k
}

// sweepBeside removes what dead owners left (their sandboxes, and dead
// keepers' records) beside a start of this keeper's, as sandbox.Start does
// beside a one-shot run's, so nothing outlives its owner for longer than
// until the next start anywhere. It runs off every command's path; a
// sweep still under way covers the starts made meanwhile.
func (k *keeper) sweepBeside(ctx context.Context) {
	if !k.sweeping.CompareAndSwap(false, true) {
		return
	}
	k.sweeps.Add(1)
	go func() {
		defer k.sweeps.Done()
		defer k.sweeping.Store(false)
		defer k.recoverPanic("the sweep")
		ctx := context.WithoutCancel(ctx)
		if _, err := k.o.Backend.Sweep(ctx); err != nil {
			k.logger.Printf("sweeping dead owners' sandboxes: %v", err)
		}
		if _, err := Sweep(k.o.Dir); err != nil {
			k.logger.Printf("sweeping dead keepers' records: %v", err)
		}
		runproxy.Sweep(runproxy.Base(), time.Now())
	}()
}

// awaitSweeps waits, a bounded time, for the sweep under way.
func (k *keeper) awaitSweeps() {
	done := make(chan struct{})
	go func() { k.sweeps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(sweepWait):
	}
}

// touch has keepRecord write the record again, off the caller's path;
// touches while it writes fold into one.
func (k *keeper) touch() {
	select {
	case k.touched <- struct{}{}:
	default:
	}
}

// recordSettle is how long a touch waits before the record is written:
// a short run's attach and detach fold into one write after its end, so
// no write (a file made and renamed, ~0.2 ms of a 2-core host's CPU)
// runs beside a command on its way; a run longer than this shows busy
// once it passed.
const recordSettle = 250 * time.Millisecond

// keepRecord writes rec with how busy the keeper is and when it was last
// used, so `session list` shows the idle time, until ctx ends.
func (k *keeper) keepRecord(ctx context.Context, rec Record) {
	settle := time.NewTimer(recordSettle)
	settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.touched:
		}
		settle.Reset(recordSettle)
		select {
		case <-ctx.Done():
			return
		case <-settle.C:
		}
		// The touches meanwhile are in what is written now.
		select {
		case <-k.touched:
		default:
		}
		rec.Busy = int(k.active.Load())
		rec.LastUsed = time.Unix(0, k.lastUsed.Load()).UTC()
		if err := writeRecord(k.paths.record(), rec); err != nil {
			k.logger.Printf("updating the record: %v", err)
		}
	}
}

// idle: no connection is attached and none was for the policy's idle time.
func (k *keeper) idle(now time.Time) bool {
	return k.active.Load() == 0 && now.Sub(time.Unix(0, k.lastUsed.Load())) > k.p.Warm.Idle
}

// expire ends the keeper once nothing used it for the policy's idle time.
// It wakes when that time would be up, not every second: a keeper host
// holds a thousand idle keepers, and a tick each was a thousand wake-ups a
// second in it.
func (k *keeper) expire(ctx context.Context) {
	t := time.NewTimer(k.untilIdle(time.Now()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			if k.idle(now) {
				k.logger.Printf("idle for %s: ending", k.p.Warm.Idle)
				k.stop()
				return
			}
			t.Reset(k.untilIdle(now))
		}
	}
}

// untilIdle is how long from now until the keeper is idle if nothing uses
// it meanwhile; a second at least (a connection attached keeps it busy
// however long ago it was last used, and is looked at again then).
func (k *keeper) untilIdle(now time.Time) time.Duration {
	d := time.Unix(0, k.lastUsed.Load()).Add(k.p.Warm.Idle).Sub(now) + time.Millisecond
	return max(d, time.Second)
}

// fill keeps the pool's ready sandboxes started, off the callers' path.
func (k *keeper) fill(ctx context.Context) {
	backoff := time.Second
	for ctx.Err() == nil {
		select {
		case k.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if len(k.ready) >= cap(k.ready) {
			<-k.slots
			select {
			case <-k.refilled:
			case <-ctx.Done():
				return
			}
			continue
		}
		k.sweepBeside(ctx)
		// The staged copy waits for the take: a run sees the writable
		// paths as they are when it takes the sandbox, not as at the fill.
		sb, err := k.startSandbox(ctx, backends.StartOptions{TTL: k.pooledTTL(), DeferStaging: true})
		if err != nil {
			<-k.slots
			k.logger.Printf("starting a pooled sandbox: %v (retrying in %s)", err, backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		k.ready <- sb
	}
}

// pooledTTL: a pooled sandbox may wait the pool's idle time, then run one
// command to its timeout.
func (k *keeper) pooledTTL() time.Duration {
	return backends.TTL(k.p, k.p.Timeout()) + k.p.Warm.Idle
}

// take gives a connection a pooled sandbox of its own: a ready one, its
// staged copy taken now, or one started now when none is.
func (k *keeper) take(ctx context.Context) (backends.Sandbox, error) {
	select {
	case sb := <-k.ready:
		k.refillIfEmpty()
		return k.stage(ctx, sb)
	default:
	}
	select {
	case sb := <-k.ready:
		k.refillIfEmpty()
		return k.stage(ctx, sb)
	case k.slots <- struct{}{}:
		k.sweepBeside(ctx)
		sb, err := k.startSandbox(ctx, backends.StartOptions{TTL: k.pooledTTL()})
		if err != nil {
			<-k.slots
		}
		return sb, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stage copies the writable paths into a ready sandbox as they are now;
// one that cannot take them is removed.
func (k *keeper) stage(ctx context.Context, sb backends.Sandbox) (backends.Sandbox, error) {
	st, ok := sb.(backends.Stager)
	if !ok {
		if k.p.StagesIn() {
			// Its copy is the fill's: stale, so not handed out.
			k.discard(ctx, sb)
			return nil, fmt.Errorf("the %s backend cannot copy the writable paths into a pooled sandbox when a run takes it", k.p.Backend)
		}
		return sb, nil
	}
	// A deferred staging may start the holder only now, which refuses to
	// start without the proxy's socket: it is served again for the take.
	err := k.proxyOf(sb).Renew()
	if err == nil {
		err = st.Stage(ctx)
	}
	if err != nil {
		k.discard(ctx, sb)
		return nil, err
	}
	return sb, nil
}

// refillIfEmpty starts the refill at a take only when no ready sandbox
// is left; otherwise the taken sandbox's end (discard) starts it: on a
// small machine a sandbox starting beside the run would take CPU from its
// command.
func (k *keeper) refillIfEmpty() {
	if len(k.ready) == 0 {
		k.nudge()
	}
}

func (k *keeper) nudge() {
	select {
	case k.refilled <- struct{}{}:
	default:
	}
}

// discard removes a used pooled sandbox in the background; the keeper
// waits for every removal before it exits.
func (k *keeper) discard(ctx context.Context, sb backends.Sandbox) {
	k.closing.Add(1)
	go func() {
		defer k.closing.Done()
		defer k.recoverPanic("removing a used sandbox")
		if err := k.closeSandbox(context.WithoutCancel(ctx), sb); err != nil {
			k.logger.Printf("removing %s: %v", sb.ID(), err)
		}
		<-k.slots
		k.nudge()
	}()
}

func (k *keeper) drainPool(ctx context.Context) {
	for {
		select {
		case sb := <-k.ready:
			_ = k.closeSandbox(ctx, sb)
		default:
			k.closing.Wait()
			return
		}
	}
}

// serve is one attached `run`: a hello naming its sandbox, then commands.
func (k *keeper) serve(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	// A front's run traced end to end: its connection's accept, then
	// keeper.fast.
	phase.Mark(ctx, "keeper.accepted")
	c := &keeperConn{conn: conn}
	sb := k.session
	if sb == nil {
		var err error
		if sb, err = k.take(ctx); err != nil {
			_ = c.sendJSON(fHello, &hello{Error: err.Error()})
			return
		}
		defer k.discard(ctx, sb)
	}
	if err := c.sendJSON(fHello, &hello{ID: sb.ID(), Scratch: sb.Scratch(), PolicyHash: k.warmHash, Warnings: sb.Warnings(), CheckoutDiscarded: backends.CheckoutDiscarded(sb)}); err != nil {
		return
	}
	frames, gone := readFrames(ctx, conn)
	ran := 0
	for {
		var f frame
		select {
		case f = <-frames:
		case <-gone:
			return
		case <-ctx.Done():
			return
		}
		switch f.t {
		case fEnd:
			k.logger.Printf("told to end")
			k.stop()
			return
		case fastpath.FRequest:
			if ran > 0 {
				return
			}
			ran++
			k.fast(ctx, c, f.b, frames, gone, false)
			return
		case fRequest:
			req, err := kmsg.DecodeRequest(f.b)
			if err != nil {
				_ = c.sendJSON(fResult, &result{Error: "unreadable request: " + err.Error()})
				return
			}
			if k.session == nil && ran > 0 {
				_ = c.sendJSON(fResult, &result{Error: "a pooled sandbox runs exactly one command"})
				return
			}
			ran++
			k.run(ctx, c, sb, req, frames, gone)
		default:
			return
		}
	}
}

type frame struct {
	t byte
	b []byte
}

// readFrames reads conn's frames until it ends (gone closes) or ctx does.
func readFrames(ctx context.Context, conn net.Conn) (<-chan frame, <-chan struct{}) {
	frames := make(chan frame)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			t, b, err := readFrame(conn)
			if err != nil {
				return
			}
			select {
			case frames <- frame{t, b}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return frames, gone
}

// fast serves a front's request (fastpath): a Fallback when this keeper
// cannot run it as the CLI would, else `run` in this process, its streams
// sent as they come and its exit code last. A Cancel, or the front going
// away, cancels the run as a SIGINT cancels the CLI's. A pool serves
// fronts only on its front socket (front): there the run takes its
// sandbox, once its policy is compiled and found to be the pool's.
func (k *keeper) fast(ctx context.Context, c *keeperConn, b []byte, frames <-chan frame, gone <-chan struct{}, front bool) {
	fallback := func(reason string) {
		_ = c.sendJSON(fastpath.FFallback, &fastpath.Fallback{Reason: reason})
	}
	req, err := fastpath.DecodeRequest(b)
	switch {
	case err != nil:
		fallback("unreadable request: " + err.Error())
		return
	case k.o.Fast == nil || k.session == nil && !front:
		fallback("this keeper runs no front's command here")
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-frames: // FCancel, or anything else: the front is done
			cancel()
		case <-gone:
			cancel()
		case <-done:
		}
	}()
	var wrote atomic.Bool
	out := func(t byte) io.Writer {
		return frameWriter{func(t byte, b []byte) error { wrote.Store(true); return c.send(t, b) }, t}
	}
	endFast := phase.Begin(ctx, "keeper.fast")
	code, reason := k.o.Fast(ctx, req, &Here{Backend: k.o.Backend, k: k}, out(fastpath.FStdout), out(fastpath.FStderr))
	endFast()
	if reason != "" {
		phase.Mark(ctx, "keeper.fast.fallback")
		if wrote.Load() {
			k.logger.Printf("a front's run fell back after output (%s)", reason)
		}
		fallback(reason)
		return
	}
	_ = c.sendJSON(fastpath.FExit, &fastpath.Exit{Code: code})
}

// keeperConn serialises what the keeper sends on one connection.
type keeperConn struct {
	conn net.Conn
	mu   sync.Mutex
}

func (c *keeperConn) send(t byte, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return writeFrame(c.conn, t, b)
}

func (c *keeperConn) sendJSON(t byte, v interface{ SetProtocol() }) error {
	b, err := kmsg.Encode(v)
	if err != nil {
		return err
	}
	return c.send(t, b)
}

// run executes one command; the attached `run` going away (even killed
// with SIGKILL) cancels it, which kills the command's whole tree while the
// sandbox stays.
func (k *keeper) run(ctx context.Context, c *keeperConn, sb backends.Sandbox, req request, frames <-chan frame, gone <-chan struct{}) {
	k.execMu.Lock()
	defer k.execMu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := backends.Command{Argv: req.Argv, Workdir: req.Workdir, Timeout: req.Timeout}
	var stdinW *io.PipeWriter
	if req.HasStdin {
		var r *io.PipeReader
		r, stdinW = io.Pipe()
		cmd.Stdin = r
	}
	done := make(chan struct{})
	go func() {
		defer func() {
			if stdinW != nil {
				_ = stdinW.Close()
			}
		}()
		for {
			select {
			case f := <-frames:
				switch f.t {
				case fStdin:
					if stdinW != nil {
						_, _ = stdinW.Write(f.b)
					}
				case fStdinEOF:
					if stdinW != nil {
						_ = stdinW.Close()
					}
				default:
					cancel()
				}
			case <-gone:
				cancel()
				return
			case <-done:
				return
			}
		}
	}()
	res, network, err := k.exec(ctx, sb, cmd, backends.Streams{
		Stdout: frameWriter{c.send, fStdout}, Stderr: frameWriter{c.send, fStderr}})
	close(done)
	r := result{Result: res, Network: network}
	if err != nil {
		r.Error = err.Error()
	}
	rb := r.Bounded()
	_ = c.sendJSON(fResult, &rb)
}

// exec runs one command in sb with its network proxy (an allow-list)
// serving for that command only, and returns the proxy's decisions. The
// caller holds execMu: one command at a time in a session's sandbox.
func (k *keeper) exec(ctx context.Context, sb backends.Sandbox, cmd backends.Command, out backends.Streams) (backends.Result, []egress.Decision, error) {
	px := k.proxyOf(sb)
	if err := px.Renew(); err != nil {
		return backends.Result{}, nil, fmt.Errorf("the network proxy (%s): %v", k.p.Network.Key, err)
	}
	endExec := phase.Begin(ctx, "keeper.exec")
	res, err := sb.Exec(ctx, cmd, out)
	endExec()
	return res, px.End(), err
}

// startSandbox starts a sandbox of this keeper's policy, with its own
// network proxy when the policy has an allow-list. The proxy lives here,
// in the keeper, because the keeper holds the sandbox: the `run` that
// attaches ends after one command, and a session's or pooled sandbox
// outlives it. Its directory lives as long as the sandbox (bound into it
// at the start); a proxy serves on it only while one of its commands runs
// (run: Renew, End), so each command has the bounds and the record of a
// cold run, and nothing reaches out between commands. The keeper dying,
// even killed with SIGKILL, takes the proxy with it; the next start's
// sweep (runproxy.Sweep) removes the directory.
func (k *keeper) startSandbox(ctx context.Context, opts backends.StartOptions) (backends.Sandbox, error) {
	bp, px, err := runproxy.Start(ctx, k.p, k.o.Backend.Capabilities())
	if err != nil {
		return nil, err
	}
	sb, err := k.o.Backend.Start(ctx, bp, opts)
	if err != nil {
		_ = px.Close()
		return nil, err
	}
	if px != nil {
		// Served only while a command runs; the start needed it (the
		// holder refuses to start without the socket).
		px.Stop()
		k.proxyMu.Lock()
		k.proxies[sb.ID()] = px
		k.proxyMu.Unlock()
	}
	return sb, nil
}

// proxyOf is sb's network proxy (nil without an allow-list).
func (k *keeper) proxyOf(sb backends.Sandbox) *runproxy.Proxy {
	k.proxyMu.Lock()
	defer k.proxyMu.Unlock()
	return k.proxies[sb.ID()]
}

// closeSandbox removes sb, then its network proxy: nothing is left to
// connect through it.
func (k *keeper) closeSandbox(ctx context.Context, sb backends.Sandbox) error {
	err := sb.Close(ctx)
	k.proxyMu.Lock()
	px := k.proxies[sb.ID()]
	delete(k.proxies, sb.ID())
	k.proxyMu.Unlock()
	if perr := px.Close(); perr != nil && err == nil {
		err = fmt.Errorf("closing the network proxy: %w", perr)
	}
	return err
}
