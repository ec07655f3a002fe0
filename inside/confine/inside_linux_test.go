package confine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

// Helper-process modes of the test binary (TestMain reads them).
const (
	envMode = "CONFINE_TEST_MODE"
	envSpec = "CONFINE_TEST_SPEC"
	// modeHelper: spawned with Namespaces; reads the plan from fd 3, runs
	// Enter and Restrict, then the checks, and prints their results.
	modeHelper = "helper"
	// modeChild: exec'd by the helper after Restrict, to check what a
	// command inherits.
	modeChild = "child"
	// modeLaunch: run as an unprivileged user; starts the helper as the
	// backend would for one.
	modeLaunch = "launch"
	// modeProbeHolder: exec'd by the holder; fails unless the holder's
	// /proc/1 fd and environ entries are closed to it.
	modeProbeHolder = "probe-holder"
)

// spec tells the checks where things are inside the sandbox.
type spec struct {
	RO, RW, Tmpfs, Unlisted string // directories
	Exe                     string // the test binary inside
	UID, GID                int
	Hostname                string
	Canary                  string   // the canary's content on the host
	KernelMasks             []string // masked kernel paths the host has
	// KeepForkerBounding: the helper skips DropForkerBounding and reports
	// whether Restrict refused.
	KeepForkerBounding bool
}

// result is one check's outcome; Err is empty when it passed.
type result struct {
	Name string `json:"name"`
	Err  string `json:"err,omitempty"`
}

type check struct {
	name string
	fn   func(s spec) error
}

// helperMain is the helper process: Enter, Restrict, checks, results as
// JSON on stdout.
func helperMain() {
	var s spec
	if err := json.Unmarshal([]byte(os.Getenv(envSpec)), &s); err != nil {
		fatalf("spec: %v", err)
	}
	p, err := ReadPlan(os.NewFile(3, "plan"))
	if err != nil {
		fatalf("%v", err)
	}
	// As the local helper does: this thread starts every child (the
	// checks' child below), and only its bounding set is emptied.
	runtime.LockOSThread()
	forker := unix.Gettid()
	if !s.KeepForkerBounding {
		if forker, err = DropForkerBounding(); err != nil {
			fatalf("%v", err)
		}
	}
	if err := Enter(context.Background(), p); err != nil {
		fatalf("%v", err)
	}
	err = Restrict(context.Background(), p, forker)
	if s.KeepForkerBounding {
		// Restrict must refuse: the forking thread could hand its
		// bounding set to every command.
		r := result{Name: "restrict refuses a forking thread with a bounding set"}
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("thread %d: CapBnd", forker)) {
			r.Err = fmt.Sprintf("Restrict: %v", err)
		}
		printResults([]result{r})
		os.Exit(0)
	}
	if err != nil {
		fatalf("%v", err)
	}
	results := run(holderChecks(), s)
	results = append(results, childResults(s)...)
	printResults(results)
	os.Exit(0)
}

// childMain runs the checks a command inherits from the holder.
func childMain() {
	var s spec
	if err := json.Unmarshal([]byte(os.Getenv(envSpec)), &s); err != nil {
		fatalf("spec: %v", err)
	}
	printResults(run(inheritedChecks(), s))
	os.Exit(0)
}

// probeHolderMain tries what a command might do to its holder.
func probeHolderMain() {
	if _, err := os.ReadDir("/proc/1/fd"); !errors.Is(err, syscall.EACCES) {
		fatalf("/proc/1/fd: got %v, want EACCES", err)
	}
	if _, err := os.ReadFile("/proc/1/environ"); !errors.Is(err, syscall.EACCES) {
		fatalf("/proc/1/environ: got %v, want EACCES", err)
	}
	os.Exit(0)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(3)
}

func run(checks []check, s spec) []result {
	var rs []result
	for _, c := range checks {
		r := result{Name: c.name}
		if err := c.fn(s); err != nil {
			r.Err = err.Error()
		}
		rs = append(rs, r)
	}
	return rs
}

func printResults(rs []result) {
	if err := json.NewEncoder(os.Stdout).Encode(rs); err != nil {
		fatalf("writing results: %v", err)
	}
}

// childResults execs the test binary inside and collects its checks.
func childResults(s spec) []result {
	cmd := exec.Command(s.Exe)
	cmd.Env = []string{envMode + "=" + modeChild, envSpec + "=" + os.Getenv(envSpec)}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return []result{{Name: "child: exec", Err: fmt.Sprintf("%v: %s", err, errb.String())}}
	}
	var rs []result
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		return []result{{Name: "child: results", Err: fmt.Sprintf("%v: %q", err, out.String())}}
	}
	for i := range rs {
		rs[i].Name = "child: " + rs[i].Name
	}
	return rs
}

// wantErrno fails unless err is errno.
func wantErrno(err error, errno syscall.Errno) error {
	if errors.Is(err, errno) {
		return nil
	}
	return fmt.Errorf("got %v, want %v", err, errno)
}

func rawErr(errno syscall.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

// holderChecks run in the holder (pid 1) right after Restrict.
func holderChecks() []check {
	return append(inheritedChecks(),
		check{"pid 1", func(spec) error {
			if os.Getpid() != 1 {
				return fmt.Errorf("pid %d", os.Getpid())
			}
			return nil
		}},
		check{"/proc shows only this pid namespace", func(spec) error {
			ents, err := os.ReadDir("/proc")
			if err != nil {
				return err
			}
			var pids []string
			for _, e := range ents {
				if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
					pids = append(pids, e.Name())
				}
			}
			if !slices.Equal(pids, []string{"1"}) {
				return fmt.Errorf("pids %v", pids)
			}
			return nil
		}},
		check{"own /proc/self/fd readable", func(spec) error {
			_, err := os.ReadDir("/proc/self/fd")
			return err
		}},
		check{"commands cannot open the holder's /proc entries", func(s spec) error {
			cmd := exec.Command(s.Exe)
			cmd.Env = []string{envMode + "=" + modeProbeHolder}
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}},
		check{"hostname", func(s spec) error {
			if h, err := os.Hostname(); err != nil || h != s.Hostname {
				return fmt.Errorf("%q, %v", h, err)
			}
			return nil
		}},
		check{"only lo, up", func(spec) error {
			ifs, err := net.Interfaces()
			if err != nil {
				return err
			}
			if len(ifs) != 1 || ifs[0].Name != "lo" || ifs[0].Flags&net.FlagUp == 0 {
				return fmt.Errorf("interfaces %v", ifs)
			}
			ents, err := os.ReadDir("/sys/class/net")
			if err != nil || len(ents) != 1 || ents[0].Name() != "lo" {
				return fmt.Errorf("/sys/class/net: %v, %v", ents, err)
			}
			return nil
		}},
		check{"loopback listener reachable", func(spec) error {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			defer ln.Close()
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Write([]byte("pong"))
					c.Close()
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return err
			}
			defer c.Close()
			b, err := io.ReadAll(c)
			if string(b) != "pong" {
				return fmt.Errorf("read %q, %v", b, err)
			}
			return nil
		}},
		check{"/dev holds the minimal set", func(spec) error {
			ents, err := os.ReadDir("/dev")
			if err != nil {
				return err
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			want := []string{"fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty",
				"urandom", "zero"}
			if !slices.Equal(names, want) && !slices.Equal(names, slices.DeleteFunc(slices.Clone(want),
				func(n string) bool { return n == "tty" })) {
				return fmt.Errorf("/dev has %v", names)
			}
			if err := os.WriteFile("/dev/null", []byte("x"), 0); err != nil {
				return err
			}
			b := make([]byte, 8)
			f, err := os.Open("/dev/urandom")
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.ReadFull(f, b)
			if err != nil {
				return err
			}
			return os.WriteFile("/dev/shm/x", []byte("x"), 0o600)
		}},
		check{"read-only mounts", func(spec) error {
			for _, p := range []string{"/", "/dev", "/proc/sys", "/sys", "/usr"} {
				var st unix.Statfs_t
				if err := unix.Statfs(p, &st); err != nil {
					return fmt.Errorf("%s: %v", p, err)
				}
				if st.Flags&unix.ST_RDONLY == 0 {
					return fmt.Errorf("%s is writable", p)
				}
			}
			return wantErrno(os.Mkdir("/newdir", 0o755), syscall.EROFS)
		}},
		check{"kernel masks", func(s spec) error {
			if len(s.KernelMasks) == 0 {
				return errors.New("the host has none of the kernel's masked paths to check")
			}
			for _, p := range s.KernelMasks {
				st, err := os.Stat(p)
				if err != nil {
					return err
				}
				switch {
				case st.IsDir() && st.Mode().Perm() != 0:
					return fmt.Errorf("%s: dir mode %v", p, st.Mode())
				case !st.IsDir() && (st.Size() != 0 || st.Mode().Perm() != 0o444):
					return fmt.Errorf("%s: size %d, mode %v", p, st.Size(), st.Mode())
				}
			}
			return nil
		}},
	)
}

// refusedSyscallsEPERM calls each syscall of seccompprofile.Refused.
func refusedSyscallsEPERM(spec) error {
	for _, name := range seccompprofile.RefusedNames() {
		nr, ok := seccompfilter.SyscallNumber(runtime.GOARCH, name)
		if !ok {
			return fmt.Errorf("%s: no syscall number on %s", name, runtime.GOARCH)
		}
		// Zero arguments: the kernel itself would answer 0,
		// ESRCH, EINVAL, EFAULT or EBADF, never EPERM.
		_, _, e := unix.Syscall6(uintptr(nr), 0, 0, 0, 0, 0, 0)
		if err := wantErrno(rawErr(e), syscall.EPERM); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// inheritedChecks hold in the holder and in every command it starts.
func inheritedChecks() []check {
	return []check{
		{"identity", func(s spec) error {
			groups, _ := os.Getgroups()
			if os.Getuid() != s.UID || os.Geteuid() != s.UID || os.Getgid() != s.GID || len(groups) != 0 {
				return fmt.Errorf("uid %d euid %d gid %d groups %v", os.Getuid(), os.Geteuid(), os.Getgid(), groups)
			}
			return nil
		}},
		{"user namespace maps only the sandbox's ids", mapsOnlySandboxIDs},
		{"status: no caps, no_new_privs, seccomp", noCapsOnAnyThread},
		{"masked canary file reads empty", func(s spec) error {
			b, err := os.ReadFile(s.RO + "/secret")
			if err != nil || len(b) != 0 {
				return fmt.Errorf("read %q, %v", b, err)
			}
			// Read-only mount, mode 0444: even its owner cannot write or chmod it.
			err = os.WriteFile(s.RO+"/secret", []byte(s.Canary), 0)
			if !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.EACCES) {
				return fmt.Errorf("writing the mask: %v", err)
			}
			return nil
		}},
		{"masked dir unreadable", func(s spec) error {
			_, err := os.ReadDir(s.RO + "/secretdir")
			if err := wantErrno(err, syscall.EACCES); err != nil {
				return err
			}
			_, err = os.ReadFile(s.RO + "/secretdir/key")
			return wantErrno(err, syscall.EACCES)
		}},
		{"ro bind: readable, not writable", func(s spec) error {
			if b, err := os.ReadFile(s.RO + "/file"); err != nil || string(b) != "data" {
				return fmt.Errorf("read %q, %v", b, err)
			}
			if err := wantErrno(os.WriteFile(s.RO+"/new", nil, 0o644), syscall.EROFS); err != nil {
				return err
			}
			if err := wantErrno(os.WriteFile(s.RO+"/sub/new", nil, 0o644), syscall.EROFS); err != nil {
				return fmt.Errorf("the writable mount under it: %w", err)
			}
			// Landlock cannot stop chmod; the read-only mount does.
			return wantErrno(os.Chmod(s.RO+"/file", 0o777), syscall.EROFS)
		}},
		{"tmpfs writable", func(s spec) error {
			p := fmt.Sprintf("%s/f%d", s.Tmpfs, os.Getpid())
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				return err
			}
			return os.Remove(p)
		}},
		{"landlock: bound but unlisted path unreadable", func(s spec) error {
			_, err := os.ReadFile(s.Unlisted + "/file")
			if err := wantErrno(err, syscall.EACCES); err != nil {
				return err
			}
			_, err = os.ReadDir(s.Unlisted)
			return wantErrno(err, syscall.EACCES)
		}},
		{"udp connect off loopback: unreachable", func(spec) error {
			// Route lookup only: connect on UDP sends nothing.
			c, err := net.Dial("udp", "192.0.2.1:9")
			if c != nil {
				c.Close()
			}
			return wantErrno(err, syscall.ENETUNREACH)
		}},
		{"seccomp: ptrace EPERM (kernel: ESRCH)", func(spec) error {
			_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 99999, 0, 0, 0, 0)
			return wantErrno(rawErr(e), syscall.EPERM)
		}},
		{"seccomp: unshare EPERM (kernel: EINVAL, threaded)", func(spec) error {
			return wantErrno(unix.Unshare(unix.CLONE_NEWUSER), syscall.EPERM)
		}},
		{"seccomp: clone CLONE_NEWUSER EPERM (kernel: EINVAL with CLONE_FS)", func(spec) error {
			_, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS, 0, 0, 0, 0, 0)
			return wantErrno(rawErr(e), syscall.EPERM)
		}},
		{"seccomp: clone3 ENOSYS (kernel: EINVAL)", func(spec) error {
			_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
			return wantErrno(rawErr(e), syscall.ENOSYS)
		}},
		{"seccomp: mount EPERM, fsopen ENOSYS", func(s spec) error {
			if err := wantErrno(unix.Mount("tmpfs", s.Tmpfs, "tmpfs", 0, ""), syscall.EPERM); err != nil {
				return err
			}
			_, err := unix.Fsopen("tmpfs", 0)
			return wantErrno(err, syscall.ENOSYS)
		}},
		{"seccomp: io_uring_setup EPERM (kernel: EFAULT)", func(spec) error {
			_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
			return wantErrno(rawErr(e), syscall.EPERM)
		}},
		{"seccomp: the list every backend refuses EPERM (process_vm_*, name_to_handle_at, pkey_*, mbind, move_pages, process_madvise)", refusedSyscallsEPERM},
		{"seccomp: personality(ADDR_NO_RANDOMIZE) EPERM", func(spec) error {
			_, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0x0040000, 0, 0)
			return wantErrno(rawErr(e), syscall.EPERM)
		}},
		{"seccomp: TIOCSTI with high bits EPERM (kernel: ENOTTY)", func(spec) error {
			f, err := os.Open("/dev/null")
			if err != nil {
				return err
			}
			defer f.Close()
			c := byte('x')
			_, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), 0x123<<32|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
			return wantErrno(rawErr(e), syscall.EPERM)
		}},
		{"seccomp: AF_PACKET EAFNOSUPPORT, netlink sock_diag EPROTONOSUPPORT, route allowed", func(spec) error {
			_, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
			if err := wantErrno(err, syscall.EAFNOSUPPORT); err != nil {
				return fmt.Errorf("AF_PACKET: %w", err)
			}
			_, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG)
			if err := wantErrno(err, syscall.EPROTONOSUPPORT); err != nil {
				return fmt.Errorf("sock_diag: %w", err)
			}
			fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
			if err != nil {
				return fmt.Errorf("NETLINK_ROUTE: %w", err)
			}
			return unix.Close(fd)
		}},
		{"rlimits", func(spec) error {
			var r unix.Rlimit
			if err := unix.Getrlimit(unix.RLIMIT_CORE, &r); err != nil || r.Cur != 0 || r.Max != 0 {
				return fmt.Errorf("CORE %+v, %v", r, err)
			}
			// A Go child raises its own soft limit to the hard one at start.
			if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1024 || r.Max != 1024 ||
				(os.Getpid() == 1 && r.Cur != 512) {
				return fmt.Errorf("NOFILE %+v, %v", r, err)
			}
			return nil
		}},
		{"rw bind writable", func(s spec) error {
			return os.WriteFile(fmt.Sprintf("%s/out-%s.txt", s.RW, strings.ToLower(os.Getenv(envMode))),
				[]byte("written inside"), 0o644)
		}},
	}
}

// mapsOnlySandboxIDs fails unless uid_map and gid_map each map the
// sandbox's id alone: no host root inside, whoever started the helper.
func mapsOnlySandboxIDs(s spec) error {
	for f, id := range map[string]int{"uid_map": s.UID, "gid_map": s.GID} {
		if err := onlyMapping("/proc/self/"+f, id); err != nil {
			return err
		}
	}
	return nil
}

// onlyMapping fails unless the id map file p (read from inside the
// namespace, so relative to its parent: the host's) holds exactly one line,
// mapping id to the same id, one id wide.
func onlyMapping(p string, id int) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{strconv.Itoa(id), strconv.Itoa(id), "1"}
	if len(lines) != 1 || !slices.Equal(strings.Fields(lines[0]), want) {
		return fmt.Errorf("%s holds %q, want the one line %q", p, b, strings.Join(want, " "))
	}
	return nil
}

// noCapsOnAnyThread: every thread holds no capability, with no_new_privs
// and seccomp on. The bounding set is per thread and only the forking one's
// is emptied (DropForkerBounding); the checks run on that thread (the holder
// locks it), so its set is read through /proc/thread-self. /proc/self is the
// thread group leader, which is not the forker when Go moved main off it.
func noCapsOnAnyThread(spec) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			return err
		}
		f := statusFields(string(b))
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
			if f[k] != "0000000000000000" {
				return fmt.Errorf("thread %s: %s %s", task.Name(), k, f[k])
			}
		}
		if f["NoNewPrivs"] != "1" || f["Seccomp"] != "2" {
			return fmt.Errorf("thread %s: NoNewPrivs %s Seccomp %s", task.Name(), f["NoNewPrivs"], f["Seccomp"])
		}
	}
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return err
	}
	if bnd := statusFields(string(b))["CapBnd"]; bnd != "0000000000000000" {
		return fmt.Errorf("forking thread: CapBnd %s", bnd)
	}
	return nil
}
