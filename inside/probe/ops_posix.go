//go:build linux || darwin

package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every op exists on Linux and macOS. What differs per kernel has the same
// name in *_linux.go and *_darwin.go: the /proc, namespace and prctl ops
// (Unsupported on macOS), TIOCSTI's call, the pty round trip, forkPaused,
// allocate and where browsers live.

var ops = map[string]opFunc{
	"read_any":         opReadAny,
	"write_any":        opWriteAny,
	"chmod":            opChmod,
	"truncate":         opTruncate,
	"symlink_read":     opSymlinkRead,
	"symlink_write":    opSymlinkWrite,
	"hardlink":         opHardlink,
	"env_scan":         opEnvScan,
	"proc_scan":        opProcScan,
	"proc_mem":         opProcMem,
	"signal":           opSignal,
	"udp_route":        opUDPRoute,
	"tcp_connect":      opTCPConnect,
	"tcp_serve":        opTCPServe,
	"tcp_token":        opTCPToken,
	"udp_token":        opUDPToken,
	"proxy_get":        opProxyGet,
	"proxy_connect":    opProxyConnect,
	"udp_send":         opUDPSend,
	"unix_connect":     opUnixConnect,
	"proc_status":      opProcStatus,
	"unshare":          opUnshare,
	"spawn_detached":   opSpawnDetached,
	"fork_bomb":        opForkBomb,
	"alloc_child":      opAllocChild,
	"exec":             opExec,
	"http_self":        opHTTPSelf,
	"scratch_io":       opScratchIO,
	"proc_features":    opProcFeatures,
	"headroom":         opHeadroom,
	"exists":           opExists,
	"uname":            opUname,
	"github_env":       opGitHubEnv,
	"spin_ignore_term": opSpinIgnoreTerm,
	"browser":          opBrowser,
	"tiocsti":          opTIOCSTI,
	"plant_outputs":    opPlantOutputs,
	"socket_family":    opSocketFamily,
	"fill":             opFill,
	"inherited_fds":    opInheritedFDs,
	"ptrace_helpers":   opPtraceHelpers,
	"signal_holder":    opSignalHolder,
	"suid_mounts":      opSuidMounts,
	"write_past":       opWritePast,
}

// eachTarget tries try on every target; the observation is OK when any
// succeeded (Detail from the last success), else it carries the first errno.
func eachTarget(targets []string, try func(string) (string, error)) Observation {
	var o Observation
	var errs []string
	for _, t := range targets {
		detail, err := try(t)
		if err != nil {
			errs = append(errs, errnoName(err))
			continue
		}
		o.OK, o.Detail = true, detail
	}
	if !o.OK {
		o.Errno = firstOr(errs)
	}
	return o
}

// opReadAny reads each path; OK when any read returned bytes. Values["found"]
// says whether the canary token was among them.
func opReadAny(s Step, _ string) Observation {
	token := s.Args["canary"]
	found := false
	o := eachTarget(s.List, func(p string) (string, error) {
		b, err := os.ReadFile(p)
		if err == nil && token != "" && bytes.Contains(b, []byte(token)) {
			found = true
		}
		return "read " + p, err
	})
	o.Values = map[string]string{"found": strconv.FormatBool(found)}
	return o
}

// opWriteAny creates or appends to each path; OK when any write landed.
func opWriteAny(s Step, _ string) Observation {
	return eachTarget(s.List, func(p string) (string, error) {
		if s.Args["mkdir"] == "true" {
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o755)
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(s.Args["content"])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return "wrote " + p, err
	})
}

func opChmod(s Step, _ string) Observation {
	p := s.Args["path"]
	if err := os.Chmod(p, 0o777); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	now := time.Unix(946684800, 0)
	if err := os.Chtimes(p, now, now); err != nil {
		return Observation{OK: true, Errno: errnoName(err), Detail: "chmod worked"}
	}
	return Observation{OK: true, Detail: "chmod and utime worked"}
}

func opTruncate(s Step, _ string) Observation {
	f, err := os.OpenFile(s.Args["path"], os.O_RDONLY|os.O_TRUNC, 0)
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	f.Close()
	return Observation{OK: true, Detail: "opened with O_TRUNC"}
}

// plantLink makes link -> target (replacing what was there); the caller
// removes it when done.
func plantLink(s Step) (string, *Observation) {
	link := s.Args["link"]
	_ = os.Remove(link)
	if err := os.Symlink(s.Args["target"], link); err != nil {
		return "", &Observation{Errno: errnoName(err), Detail: "symlink failed"}
	}
	return link, nil
}

// opSymlinkRead plants link -> target in a writable dir and reads through it.
func opSymlinkRead(s Step, _ string) Observation {
	link, failed := plantLink(s)
	if failed != nil {
		return *failed
	}
	defer os.Remove(link)
	b, err := os.ReadFile(link)
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	found := strconv.FormatBool(bytes.Contains(b, []byte(s.Args["canary"])))
	return Observation{OK: true, Values: map[string]string{"found": found}, Detail: "read through the link"}
}

// opSymlinkWrite plants link -> target and writes through it.
func opSymlinkWrite(s Step, _ string) Observation {
	link, failed := plantLink(s)
	if failed != nil {
		return *failed
	}
	defer os.Remove(link)
	f, err := os.OpenFile(link, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	_, err = f.WriteString(s.Args["content"])
	f.Close()
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return Observation{OK: true, Detail: "wrote through the link"}
}

func opHardlink(s Step, _ string) Observation {
	dst := s.Args["dst"]
	_ = os.Remove(dst)
	if err := os.Link(s.Args["src"], dst); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return Observation{OK: true, Detail: "hard link created"}
}

// opEnvScan looks for canary values in this process's environment.
func opEnvScan(s Step, _ string) Observation {
	var seen []string
	for _, kv := range os.Environ() {
		for _, c := range s.List {
			if c != "" && strings.Contains(kv, c) {
				name, _, _ := strings.Cut(kv, "=")
				seen = append(seen, name)
			}
		}
	}
	if len(seen) == 0 {
		return Observation{Detail: fmt.Sprintf("%d variables, no canary", len(os.Environ()))}
	}
	return Observation{OK: true, Detail: "canary in " + strings.Join(seen, ",")}
}

func opSignal(s Step, _ string) Observation {
	pid, _ := strconv.Atoi(s.Args["pid"])
	if pid <= 1 {
		return Observation{Errno: "EINVAL"}
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return Observation{OK: true, Detail: "signal 0 delivered"}
}

// opUDPRoute connect()s a UDP socket to each address: a route lookup only,
// no packet is sent. OK when any address has a route.
func opUDPRoute(s Step, _ string) Observation {
	return eachTarget(s.List, func(a string) (string, error) {
		c, err := net.Dial("udp", a)
		if err != nil {
			return "", err
		}
		defer c.Close()
		return "route to " + a + " from " + c.LocalAddr().String(), nil
	})
}

// opTCPConnect dials each address. A refusal or a timeout means a packet
// reached something: both count as OK (reached), never as blocked.
func opTCPConnect(s Step, _ string) Observation {
	var o Observation
	var errs []string
	for _, a := range s.List {
		c, err := net.DialTimeout("tcp", a, 700*time.Millisecond)
		if err == nil {
			_, _ = c.Write([]byte("probe\n"))
			c.Close()
			o.OK = true
			o.Detail = "connected to " + a
			continue
		}
		name := errnoName(err)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			name = "ETIMEDOUT"
		}
		if name == "ECONNREFUSED" || name == "ETIMEDOUT" {
			o.OK = true
			o.Detail = name + " from " + a
			continue
		}
		errs = append(errs, name)
	}
	if o.OK {
		o.Values = map[string]string{"reached": "true"}
	} else {
		o.Errno = firstOr(errs)
	}
	return o
}

// opUnixConnect connects to each socket; OK when any answered. With Args
// await, it then waits (a second at most) for the listener to close the
// connection, so a listener that counts has counted when the probe ends.
func opUnixConnect(s Step, _ string) Observation {
	return eachTarget(s.List, func(p string) (string, error) {
		c, err := net.DialTimeout("unix", p, time.Second)
		if err != nil {
			return "", err
		}
		defer c.Close()
		if s.Args["await"] == "true" {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = io.Copy(io.Discard, c)
		}
		return "connected to " + p, nil
	})
}

// holderSignals are what opSignalHolder sends: every catchable signal
// that ends a Go program, or crashes it, when it has a handler for it (the
// Go runtime installs one for each).
var holderSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGABRT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE,
	syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS}

// opSignalHolder sends the sandbox's holder (pid "1") holderSignals, or,
// with pid "child", a naive holder it starts itself (the control: a
// process that heeds them). OK means the target ended; inside the
// sandbox an ended holder ends the run, and this observation with it.
func opSignalHolder(s Step, self string) Observation {
	pid, ended := 0, func() bool { return false }
	if s.Args["pid"] == "child" {
		cmd := exec.Command(self, ChildSubcommand, "naive_holder")
		out, err := cmd.StdoutPipe()
		if err != nil {
			return Observation{Errno: errnoName(err)}
		}
		if err := cmd.Start(); err != nil {
			return Observation{Errno: errnoName(err)}
		}
		defer func() { _ = cmd.Process.Kill() }()
		buf := make([]byte, 6)
		if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
			_ = cmd.Wait()
			return Observation{Errno: "ENOTREADY", Detail: "the naive holder did not start"}
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		pid = cmd.Process.Pid
		ended = func() bool {
			select {
			case <-done:
				return true
			case <-time.After(time.Second):
				return false
			}
		}
	} else if pid, _ = strconv.Atoi(s.Args["pid"]); pid != 1 {
		return Observation{Errno: "EINVAL"}
	}
	var sent, refused int
	for _, sig := range holderSignals {
		if err := syscall.Kill(pid, sig); err != nil {
			refused++ // EPERM: refused is as good as dropped
			continue
		}
		sent++
	}
	if pid == 1 {
		time.Sleep(500 * time.Millisecond) // time for an ended holder to take the run with it
		// Only ESRCH says it is gone: a refused probe (EPERM) is not.
		ended = func() bool { return errors.Is(syscall.Kill(1, 0), syscall.ESRCH) }
	}
	if ended() {
		return Observation{OK: true, Detail: fmt.Sprintf("pid %d ended after %d signals", pid, sent)}
	}
	return Observation{Detail: fmt.Sprintf("pid %d still runs after %d signals (%d refused)", pid, sent, refused)}
}

// opSpawnDetached starts a setsid'd child that sleeps with the token in its
// argv; the host looks for it after the run.
func opSpawnDetached(s Step, self string) Observation {
	cmd := exec.Command(self, ChildSubcommand, "sleep", s.Args["token"], s.Args["seconds"])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return Observation{OK: true, Detail: "detached child " + strconv.Itoa(pid)}
}

// opForkBomb forks paused children until fork fails or cap is reached, then
// kills them. OK means the cap was reached (no limit was hit).
func opForkBomb(s Step, _ string) Observation {
	limit, _ := strconv.Atoi(s.Args["cap"])
	var pids []int
	var ferr error
	for len(pids) < limit {
		pid, err := forkPaused()
		if err != nil {
			ferr = err
			break
		}
		pids = append(pids, pid)
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	// Each child by its pid: steps of other lanes have children of their
	// own, which a wait for any child would take from them.
	for _, p := range pids {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p, &ws, 0, nil)
	}
	o := Observation{Values: map[string]string{"forked": strconv.Itoa(len(pids))}}
	if ferr != nil {
		o.Errno = errnoName(ferr)
		o.Detail = fmt.Sprintf("fork failed after %d children", len(pids))
		return o
	}
	o.OK = true
	o.Detail = fmt.Sprintf("forked %d children without hitting a limit", len(pids))
	return o
}

// opAllocChild runs a child that allocates and touches N bytes and reports
// how it ended: killed by SIGKILL (the memory limit) or exited.
func opAllocChild(s Step, self string) Observation {
	cmd := exec.Command(self, ChildSubcommand, "alloc", s.Args["bytes"])
	err := cmd.Run()
	if err == nil {
		return Observation{OK: true, Detail: "allocated " + s.Args["bytes"] + " bytes"}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return Observation{Errno: fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), ws.Signal()), Values: map[string]string{"signal": strconv.Itoa(int(ws.Signal()))}}
		}
		return Observation{Errno: fmt.Sprintf("exit %d", ee.ExitCode())}
	}
	return Observation{Errno: errnoName(err)}
}

// opExec runs an argv (a control about a tool: python3, git) and reports its
// exit and an output excerpt. Args["dir"] sets the directory.
func opExec(s Step, _ string) Observation {
	if len(s.List) == 0 {
		return Observation{Errno: "EINVAL"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.List[0], s.List[1:]...)
	cmd.Dir = s.Args["dir"]
	out, err := cmd.CombinedOutput()
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: string(out)}
	}
	return Observation{OK: true, Detail: strings.TrimSpace(string(out))}
}

// opHTTPSelf serves HTTP on loopback and fetches it: the reproducer
// pattern. Args: addr to listen on (a name is resolved: "localhost:0"),
// and host, when set, the name to fetch it by instead of the address.
func opHTTPSelf(s Step, _ string) Observation {
	ln, err := net.Listen("tcp", s.Args["addr"])
	if err != nil {
		return Observation{Errno: lookupErrno(err), Detail: "listen on " + s.Args["addr"]}
	}
	defer ln.Close()
	marker := "triage-selftest-page"
	go servePage(ln, "text/plain", marker, 2*time.Second)
	hostport := ln.Addr().String()
	if name := s.Args["host"]; name != "" {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		hostport = net.JoinHostPort(name, port)
	}
	url := "http://" + hostport + "/"
	code, b, err := fetchPage(hostport, 3*time.Second)
	if err != nil {
		return Observation{Errno: lookupErrno(err), Detail: "get " + url}
	}
	if code != 200 || string(b) != marker {
		return Observation{Errno: "EINVAL", Detail: fmt.Sprintf("status %d body %q", code, b)}
	}
	return Observation{OK: true, Detail: "served on " + ln.Addr().String() + " and fetched " + url}
}

// lookupErrno names a failed name lookup as getaddrinfo(3) does
// (EAI_AGAIN: no DNS server answered; EAI_NONAME: none knows the name),
// what a program in the sandbox would print; other errors by their errno.
func lookupErrno(err error) string {
	var dns *net.DNSError
	switch {
	case !errors.As(err, &dns):
		return errnoName(err)
	case dns.IsNotFound:
		return "EAI_NONAME"
	case dns.IsTemporary || dns.IsTimeout:
		return "EAI_AGAIN"
	}
	return "EAI_FAIL"
}

// opScratchIO writes and reads back in each directory, makes a FIFO, and
// uses /dev/null and /dev/urandom.
func opScratchIO(s Step, _ string) Observation {
	for _, d := range s.List {
		p := filepath.Join(d, ".selftest-scratch")
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			return Observation{Errno: errnoName(err), Detail: "write " + d}
		}
		if _, err := os.ReadFile(p); err != nil {
			return Observation{Errno: errnoName(err), Detail: "read " + d}
		}
		_ = os.Remove(p)
	}
	if len(s.List) > 0 {
		fifo := filepath.Join(s.List[0], ".selftest-fifo")
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			return Observation{Errno: errnoName(err), Detail: "mkfifo"}
		}
		_ = os.Remove(fifo)
	}
	if err := os.WriteFile("/dev/null", []byte("x"), 0); err != nil {
		return Observation{Errno: errnoName(err), Detail: "/dev/null"}
	}
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "/dev/urandom"}
	}
	defer f.Close()
	if _, err := io.ReadFull(f, make([]byte, 16)); err != nil {
		return Observation{Errno: errnoName(err), Detail: "/dev/urandom"}
	}
	return Observation{OK: true, Detail: "scratch, fifo, /dev/null, /dev/urandom"}
}

// opProcFeatures: fork/exec, threads, a pty round trip and a socketpair.
func opProcFeatures(s Step, self string) Observation {
	if err := exec.Command(self, ChildSubcommand, "true").Run(); err != nil {
		return Observation{Errno: errnoName(err), Detail: "fork/exec"}
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); time.Sleep(time.Millisecond) }()
	}
	wg.Wait()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "socketpair"}
	}
	unix.Close(fds[0])
	unix.Close(fds[1])
	if err := ptyRoundTrip(); err != nil {
		return Observation{Errno: errnoName(err), Detail: "pty"}
	}
	return Observation{OK: true, Detail: "fork/exec, threads, socketpair, pty"}
}

// opHeadroom checks the limits leave room for ordinary work: memory in a
// child, processes, a scratch write and a second of CPU.
func opHeadroom(s Step, self string) Observation {
	if o := opAllocChild(Step{Args: map[string]string{"bytes": s.Args["memory"]}}, self); !o.OK {
		o.Detail = "allocating " + s.Args["memory"] + " bytes: " + o.Errno
		return o
	}
	procs, _ := strconv.Atoi(s.Args["procs"])
	// Where the sandbox's process limit is an rlimit below the policy's
	// (gVisor's, bound by memory), headroom is half of what it allows.
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &lim) == nil && lim.Cur > 0 && lim.Cur < uint64(2*procs) {
		procs = int(lim.Cur / 2)
	}
	if o := opForkBomb(Step{Args: map[string]string{"cap": strconv.Itoa(procs)}}, self); !o.OK {
		o.Detail = "spawning " + s.Args["procs"] + " processes: " + o.Detail
		return o
	}
	size, _ := strconv.Atoi(s.Args["scratch_bytes"])
	p := filepath.Join(s.Args["scratch"], ".selftest-headroom")
	err := os.WriteFile(p, make([]byte, size), 0o600)
	_ = os.Remove(p)
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "writing scratch"}
	}
	end := time.Now().Add(200 * time.Millisecond)
	for n := 0; time.Now().Before(end); n++ {
		_ = n * n
	}
	return Observation{OK: true, Detail: fmt.Sprintf("%s bytes memory, %d processes, %d bytes scratch, CPU", s.Args["memory"], procs, size)}
}

func opExists(s Step, _ string) Observation {
	if _, err := os.Lstat(s.Args["path"]); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return Observation{OK: true, Detail: "present"}
}

// opUname reports the kernel release the sandbox presents (gVisor's is
// its own), for the report.
func opUname(Step, string) Observation {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return Observation{OK: true, Detail: unix.ByteSliceToString(u.Release[:])}
}

// opGitHubEnv appends to $GITHUB_ENV, or the fallback path when unset.
func opGitHubEnv(s Step, _ string) Observation {
	path := os.Getenv("GITHUB_ENV")
	if path == "" {
		path = s.Args["fallback"]
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	_, err = f.WriteString("BASH_ENV=/tmp/evil\n")
	f.Close()
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return Observation{OK: true, Detail: "appended to " + path}
}

// opSpinIgnoreTerm ignores SIGTERM and burns CPU until killed.
func opSpinIgnoreTerm(s Step, _ string) Observation {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for {
		time.Sleep(10 * time.Millisecond)
	}
}

func firstOr(errs []string) string {
	if len(errs) == 0 {
		return "no target"
	}
	return errs[0]
}

// opPlantOutputs leaves in the outputs what a hostile run would for a host
// reader: a set-uid file, a nested git repository with a hook, a symlink to
// a secret and a triage.toml that would open the network.
func opPlantOutputs(s Step, _ string) Observation {
	dir := s.Args["dir"]
	var done []string
	try := func(what string, f func() error) {
		if err := f(); err == nil {
			done = append(done, what)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	try("setuid", func() error {
		p := filepath.Join(dir, "suid")
		if err := os.WriteFile(p, []byte("#!/bin/sh\nid\n"), 0o755); err != nil {
			return err
		}
		return os.Chmod(p, 0o755|os.ModeSetuid)
	})
	try("git", func() error {
		return os.WriteFile(filepath.Join(dir, ".git", "hooks", "post-checkout"), []byte("#!/bin/sh\nid\n"), 0o755)
	})
	try("symlink", func() error { return os.Symlink(s.Args["secret"], filepath.Join(dir, "link")) })
	try("config", func() error {
		return os.WriteFile(filepath.Join(dir, "triage.toml"), []byte("[sandbox]\nnetwork = true\nsecrets = []\n"), 0o644)
	})
	return Observation{OK: len(done) == 4, Detail: "planted " + strings.Join(done, ", ")}
}

// opSocketFamily creates a socket of a numbered address family (AF_VSOCK
// is 40): a channel a network namespace does not isolate.
func opSocketFamily(s Step, _ string) Observation {
	family, err := strconv.Atoi(s.Args["family"])
	if err != nil {
		return Observation{Errno: "EINVAL"}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	syscall.Close(fd)
	return Observation{OK: true, Detail: fmt.Sprintf("socket(%d) created", family)}
}

// opWritePast writes one byte at offset bytes of a new file in the
// temporary directory (sparse: nothing else is stored), then removes it.
// Past a file-size limit (RLIMIT_FSIZE) the write fails with EFBIG (the
// Go runtime ignores SIGXFSZ). OK: the byte was written.
func opWritePast(s Step, _ string) Observation {
	off, err := strconv.ParseInt(s.Args["bytes"], 10, 64)
	if err != nil || off <= 0 {
		return Observation{Errno: "EINVAL", Detail: "no offset to write at"}
	}
	f, err := os.CreateTemp("", "write-past-*")
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "creating a file in the temporary directory"}
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.WriteAt([]byte{1}, off); err != nil {
		return Observation{Errno: errnoName(err), Detail: "writing at offset " + strconv.FormatInt(off, 10)}
	}
	return Observation{OK: true, Detail: "wrote a byte at offset " + strconv.FormatInt(off, 10)}
}
