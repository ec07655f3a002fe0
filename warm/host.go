package warm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	kmsg "github.com/triage-sandbox/triage-sandbox/protocol/keeper"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

// A keeper host is the one process that hosts every keeper of a user, of
// one binary and one environment: each hosted keeper is today's keeper
// (its own socket, record and log, its own sandboxes), run as goroutines,
// so an idle session costs the host its goroutines and buffers, not a
// process of 16-18 MiB. A client that needs a keeper asks the host on its
// control socket (kmsg.HostRequest), starting the host first when none
// runs (under the host's lock, so two clients never start two). The host
// ends once it has held no keeper for its grace.
//
// Why per binary and environment: a keeper's backend is built from the
// environment of the process it runs in (DOCKER_HOST, PATH, the runtime's
// variables), and the fast path runs a front's `run` in the keeper only
// when the front's environment is the keeper's (fastpath.SameEnv). So a
// client's keeper is hosted only by a host started with the client's own
// environment (but for PWD, OLDPWD, _ and SHLVL, as SameEnv) from the client's
// own binary (fastpath.FileID): what a keeper process of its own would
// have had.

// hostGrace is how long a host holding no keeper waits for another before
// it ends: a session ended and started again right after keeps its host.
const hostGrace = 3 * time.Second

// fHost is the one frame type of a host's control socket, both ways.
const fHost byte = 32

// HostKey names the host of a client running selfExe with env.
func HostKey(selfExe string, env []string) (string, error) {
	id, err := fastpath.FileID(selfExe)
	if err != nil {
		return "", fmt.Errorf("warm: the binary to host keepers: %w", err)
	}
	sum := sha256.Sum256([]byte("host\x00" + id + "\x00" + fastpath.EnvDigest(env)))
	return hex.EncodeToString(sum[:8]), nil
}

// hostPaths of one host (beside its keepers' files, prefixed so that no
// keeper's key names them).
type hostPaths struct{ dir, k string }

func (p hostPaths) socket() string { return filepath.Join(p.dir, hostPrefix+p.k+".sock") }
func (p hostPaths) record() string { return filepath.Join(p.dir, hostPrefix+p.k+".rec") }
func (p hostPaths) lock() string   { return filepath.Join(p.dir, hostPrefix+p.k+".lock") }
func (p hostPaths) log() string    { return filepath.Join(p.dir, hostPrefix+p.k+".log") }

const hostPrefix = "host-"

// HostOptions configure a keeper host.
type HostOptions struct {
	Dir string
	Key string
	Log io.Writer
	// Grace is how long it stays with no keeper (hostGrace when zero).
	Grace time.Duration
	// Keeper gives a keeper of p its backend (one per backend and
	// settings, shared) and its fast path; Dir, Policy, Log, Host and
	// Ready are the host's to set.
	Keeper func(ctx context.Context, p *policy.Policy) (KeeperOptions, error)
}

type host struct {
	o      HostOptions
	paths  hostPaths
	logger *log.Logger
	ctx    context.Context

	mu      sync.Mutex
	keepers map[string]*hosted
	closing bool
	changed time.Time // when the last keeper ended, or the host started
	served  sync.WaitGroup
	running sync.WaitGroup
	// sweeping: one sweep beside its keepers' starts at a time
	// (KeeperOptions.Sweeping).
	sweeping atomic.Bool
}

// hosted is one keeper in its host.
type hosted struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Host runs a keeper host until it has held no keeper for its grace, or
// it is signalled (which ends every keeper it holds: their sandboxes are
// removed). It removes its socket and record before it returns.
func Host(ctx context.Context, o HostOptions) error {
	if !kmsg.ValidKey(o.Key) {
		return fmt.Errorf("warm: host key %q: want 16 hex digits", o.Key)
	}
	if o.Grace == 0 {
		o.Grace = hostGrace
	}
	if err := hostfs.PrivateDir(o.Dir); err != nil {
		return fmt.Errorf("warm: the keepers' directory: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	h := &host{o: o, paths: hostPaths{o.Dir, o.Key}, logger: log.New(o.Log, "", log.LstdFlags), ctx: ctx,
		keepers: map[string]*hosted{}, changed: time.Now()}
	ln, unlisten, err := h.listen()
	if err != nil {
		return err
	}
	defer unlisten()
	idle := make(chan struct{})
	go h.expire(ctx, idle)
	go func() {
		select {
		case <-ctx.Done():
		case <-idle:
		}
		h.mu.Lock()
		h.closing = true
		h.mu.Unlock()
		_ = ln.Close()
	}()
	h.accept(ln)
	// Signalled: every keeper's context is the host's, so each ends and
	// removes its sandboxes; the host waits for all.
	h.served.Wait()
	h.running.Wait()
	return nil
}

// listen listens on the host's control socket and writes its record; the
// undo removes both while they are still this host's.
func (h *host) listen() (net.Listener, func(), error) {
	_ = os.Remove(h.paths.socket()) // a dead host's: clients start one only when none answers
	ln, err := net.Listen("unix", h.paths.socket())
	if err != nil {
		return nil, nil, fmt.Errorf("warm: the host listening: %w", err)
	}
	if err := os.Chmod(h.paths.socket(), 0o600); err != nil {
		_ = ln.Close()
		return nil, nil, err
	}
	mine, err := os.Stat(h.paths.socket())
	if err != nil {
		_ = ln.Close()
		return nil, nil, err
	}
	rec := kmsg.HostRecord{PID: os.Getpid(), Start: ownership.ProcessStart(os.Getpid()), Since: time.Now().UTC()}
	b, err := kmsg.Encode(&rec)
	if err == nil {
		err = hostfs.WriteFileReplace(h.paths.record(), b)
	}
	if err != nil {
		_ = ln.Close()
		return nil, nil, fmt.Errorf("warm: the host's record: %w", err)
	}
	return ln, func() {
		if fi, err := os.Stat(h.paths.socket()); err == nil && os.SameFile(fi, mine) {
			_ = os.Remove(h.paths.socket())
		}
		if r, err := readHostRecord(h.paths.record()); err == nil && r.PID == rec.PID && r.Since.Equal(rec.Since) {
			_ = os.Remove(h.paths.record())
			_ = os.Remove(h.paths.log()) // a clean end: each keeper logged to its own
		}
	}, nil
}

// expire closes idle once the host has held no keeper for its grace.
func (h *host) expire(ctx context.Context, idle chan<- struct{}) {
	t := time.NewTicker(h.o.Grace / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		empty := len(h.keepers) == 0 && time.Since(h.changed) > h.o.Grace
		if empty {
			// From here every request is told to retry with another host.
			h.closing = true
		}
		h.mu.Unlock()
		if empty {
			h.logger.Printf("no keeper for %s: ending", h.o.Grace)
			close(idle)
			return
		}
	}
}

func (h *host) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		h.served.Add(1)
		go func() {
			defer h.served.Done()
			defer conn.Close()
			h.serve(conn)
		}()
	}
}

// serve answers one control connection: its peer checked, one request
// read strictly, one reply.
func (h *host) serve(conn net.Conn) {
	reply := func(r kmsg.HostReply) {
		b, err := kmsg.Encode(&r)
		if err == nil {
			_ = writeFrame(conn, fHost, b)
		}
	}
	if err := checkPeer(conn, os.Getuid()); err != nil {
		h.logger.Printf("refused a control connection: %v", err)
		return // nothing said to another user
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := readHostRequest(conn)
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		reply(kmsg.HostReply{Error: err.Error()})
		return
	}
	switch req.Op {
	case kmsg.HostKeep:
		reply(h.keepOne(conn, req.Policy))
	case kmsg.HostEnd:
		reply(h.endOne(req.Key))
	}
}

// readHostRequest reads one request frame, bounded as a keeper's policy.
func readHostRequest(r io.Reader) (kmsg.HostRequest, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return kmsg.HostRequest{}, fmt.Errorf("reading the request: %w", err)
	}
	if hdr[0] != fHost {
		return kmsg.HostRequest{}, fmt.Errorf("frame type %d: not a host request", hdr[0])
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > kmsg.MaxPolicy {
		return kmsg.HostRequest{}, fmt.Errorf("a request of %d bytes, over the %d-byte bound", n, kmsg.MaxPolicy)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return kmsg.HostRequest{}, fmt.Errorf("reading the request: %w", err)
	}
	return kmsg.DecodeHostRequest(b)
}

// checkPeer refuses a connection from a process of another user than
// uid: the directory is the user's alone, but the host does not rely on
// that alone.
func checkPeer(conn net.Conn, uid int) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	got := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) { got, cerr = peerUID(int(fd)) }); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("the peer's credentials: %w", cerr)
	}
	return samePeer(got, uid)
}

// samePeer: the peer runs as uid (got is -1 when unknown).
func samePeer(got, uid int) error {
	if got < 0 || got != uid {
		return fmt.Errorf("a peer of uid %d, this host's is %d", got, uid)
	}
	return nil
}

// keepOne hosts a keeper of p and answers once it listens, or why it
// ended; a client that goes away before then ends it.
func (h *host) keepOne(conn net.Conn, p *policy.Policy) kmsg.HostReply {
	k := key(p)
	h.mu.Lock()
	old := h.keepers[k]
	h.mu.Unlock()
	if old != nil {
		// Ending (its client holds the key's lock and found no socket):
		// its sandboxes go before a successor's start.
		select {
		case <-old.done:
		case <-time.After(keeperStart):
			return kmsg.HostReply{Error: "the keeper of this session or pool is still ending"}
		}
	}
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		return kmsg.HostReply{Error: "the keeper host is ending", Retry: true}
	}
	if cur := h.keepers[k]; cur != nil && cur != old {
		h.mu.Unlock()
		return kmsg.HostReply{Error: "another client started this keeper meanwhile"}
	}
	ctx, cancel := context.WithCancel(h.ctx)
	hk := &hosted{cancel: cancel, done: make(chan struct{})}
	h.keepers[k] = hk
	h.running.Add(1)
	h.mu.Unlock()
	ready := make(chan struct{})
	go h.run(ctx, k, hk, p, ready)
	gone := make(chan struct{})
	go func() { _, _ = conn.Read(make([]byte, 1)); close(gone) }()
	select {
	case <-ready:
		return kmsg.HostReply{}
	case <-hk.done:
		msg := "it ended at once"
		if hk.err != nil {
			msg = hk.err.Error()
		}
		return kmsg.HostReply{Error: msg}
	case <-gone:
		cancel()
		return kmsg.HostReply{Error: "the client went away"}
	case <-time.After(keeperStart):
		cancel()
		return kmsg.HostReply{Error: fmt.Sprintf("the keeper did not start within %s", keeperStart)}
	}
}

// run is one hosted keeper, to its end. A panic that reaches it is
// logged and ends only this keeper (its own goroutines recover theirs:
// keeper.recoverPanic).
func (h *host) run(ctx context.Context, k string, hk *hosted, p *policy.Policy, ready chan<- struct{}) {
	kp := paths{h.o.Dir, k}
	logw := &appendLog{path: kp.log()}
	defer func() {
		if r := recover(); r != nil {
			hk.err = fmt.Errorf("panic: %v", r)
			msg := fmt.Sprintf("keeper %s: panic: %v; ended\n%s", k, r, debug.Stack())
			h.logger.Print(msg)
			_, _ = io.WriteString(logw, msg)
		}
		hk.cancel()
		h.mu.Lock()
		if h.keepers[k] == hk {
			delete(h.keepers, k)
		}
		h.changed = time.Now()
		h.mu.Unlock()
		close(hk.done)
		h.running.Done()
	}()
	o, err := h.o.Keeper(ctx, p)
	if err != nil {
		hk.err = err
		return
	}
	var once sync.Once
	o.Dir, o.Policy, o.Log, o.Host, o.Sweeping = h.o.Dir, p, logw, h.o.Key, &h.sweeping
	o.Ready = func() { once.Do(func() { close(ready) }) }
	hk.err = keep(ctx, o)
	if hk.err != nil {
		h.logger.Printf("keeper %s: %v", k, hk.err)
	}
}

// endOne ends the keeper of key k and answers once its sandboxes are
// removed.
func (h *host) endOne(k string) kmsg.HostReply {
	h.mu.Lock()
	hk := h.keepers[k]
	h.mu.Unlock()
	if hk == nil {
		return kmsg.HostReply{}
	}
	hk.cancel()
	select {
	case <-hk.done:
		return kmsg.HostReply{}
	case <-time.After(keeperStart):
		return kmsg.HostReply{Error: fmt.Sprintf("the keeper did not end within %s", keeperStart)}
	}
}

// appendLog is a keeper's log in its host: opened for each line (a
// keeper logs rarely), so an idle keeper holds no descriptor for it. The
// client that asked for the keeper made the file; once a clean end has
// removed it, later lines (a pool's filling cancelled while its sandboxes
// go) are dropped, as a keeper process's went to an unlinked file.
type appendLog struct {
	mu   sync.Mutex
	path string
}

func (l *appendLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := hostfs.OpenNoFollow(l.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return len(b), nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Write(b)
}

func readHostRecord(path string) (kmsg.HostRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return kmsg.HostRecord{}, err
	}
	return kmsg.DecodeHostRecord(b)
}

// sweepHosts removes the files of hosts that are gone (killed: a host that
// ends removes its own), except a lock less than a minute old, which a
// client starting a host may hold.
func sweepHosts(dir string, entries []os.DirEntry) []string {
	var removed []string
	seen := map[string]bool{}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), hostPrefix)
		if !ok {
			continue
		}
		k := strings.TrimSuffix(name, filepath.Ext(name))
		if seen[k] || !kmsg.ValidKey(k) {
			continue
		}
		seen[k] = true
		hp := hostPaths{dir, k}
		r, err := readHostRecord(hp.record())
		if err == nil && r.PID > 0 && ownership.ProcessStart(r.PID) == r.Start {
			continue
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			if fi, serr := os.Stat(hp.record()); serr != nil || time.Since(fi.ModTime()) < time.Minute {
				continue // being written
			}
		}
		if errors.Is(err, os.ErrNotExist) && answers(hp.socket()) {
			continue // listening, its record not yet written
		}
		for _, f := range []string{hp.socket(), hp.record(), hp.log()} {
			if os.Remove(f) == nil {
				removed = append(removed, "warm host "+filepath.Base(f))
			}
		}
		if fi, err := os.Stat(hp.lock()); err == nil && time.Since(fi.ModTime()) > time.Minute {
			_ = os.Remove(hp.lock())
		}
	}
	return removed
}

// answers: something listens on the socket at path.
func answers(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
