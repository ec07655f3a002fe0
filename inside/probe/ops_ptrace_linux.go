package probe

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// opPtraceHelpers tries to take control of the sandbox's own helpers: it
// seizes (PTRACE_SEIZE) its parent (the exec supervisor), pid 1 (the
// holder) and its grandparent, and opens the entries of their
// /proc/PID/fd. Each target's outcome is a value: "ok" or the errno
// (a seccomp refusal of ptrace is an errno like any other). As the
// control it does the same to a child of its own, which nothing guards.
//
// Args: host_pidns is the host's /proc/self/ns/pid link; in that pid
// namespace pid 1 and the grandparent are the host's, not ours, and are
// skipped. skip_pid is the selftest's own pid: the control's parent, which
// it never touches.
func opPtraceHelpers(s Step, self string) Observation {
	vals := map[string]string{}
	hostNS := readlinkOr("/proc/self/ns/pid") == s.Args["host_pidns"]
	for _, t := range helperTargets(hostNS, s.Args["host_pidns"] == "", s.Args["skip_pid"]) {
		if t.skip != "" {
			vals[t.name], vals[t.name+"_fd"] = "skipped: "+t.skip, "skipped: "+t.skip
			continue
		}
		vals[t.name] = errOK(seizeAndRelease(t.pid))
		vals[t.name+"_fd"] = openProcFDs(t.pid)
	}
	child := exec.Command(self, ChildSubcommand, "sleep", "ptrace-control", "30")
	// A pipe as its stdin: a private descriptor for the control to open
	// (the rest are /dev/null, public).
	childIn, err := child.StdinPipe()
	if err == nil {
		defer childIn.Close()
		err = child.Start()
	}
	if err != nil {
		vals["child"] = errnoName(err)
	} else {
		vals["child"] = errOK(seizeAndRelease(child.Process.Pid))
		vals["child_fd"] = openProcFDs(child.Process.Pid)
		_ = child.Process.Kill()
		_ = child.Wait()
	}
	var parts []string
	for _, k := range []string{"parent", "pid1", "grandparent", "child"} {
		parts = append(parts, k+"="+vals[k]+"/"+vals[k+"_fd"])
	}
	return Observation{OK: true, Detail: strings.Join(parts, " "), Values: vals}
}

type helperTarget struct {
	name string
	pid  int
	skip string
}

// helperTargets are the processes above the command: its parent, pid 1
// and its grandparent (where it is neither pid 1 nor outside our view).
// Without the host's namespace to compare with (unknown), nothing above
// is touched: a probe run by hand must not stop the host's init.
func helperTargets(hostNS, unknown bool, skipPID string) []helperTarget {
	ppid := os.Getppid()
	parent := helperTarget{name: "parent", pid: ppid}
	switch {
	case unknown:
		parent.skip = "no host pid namespace given"
	case hostNS && strconv.Itoa(ppid) == skipPID:
		parent.skip = "the parent is the selftest itself"
	}
	pid1 := helperTarget{name: "pid1", pid: 1}
	grand := helperTarget{name: "grandparent", pid: parentOf(ppid)}
	switch {
	case unknown:
		pid1.skip, grand.skip = parent.skip, parent.skip
	case hostNS:
		pid1.skip = "the host's pid namespace: pid 1 is the host's init"
		grand.skip = "the host's pid namespace"
	case grand.pid <= 1:
		grand.skip = "none but pid 1"
	}
	return []helperTarget{parent, pid1, grand}
}

// seizeAndRelease seizes pid; if that works it interrupts, waits for the
// stop and detaches, so the helper runs on unharmed.
func seizeAndRelease(pid int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceSeize(pid); err != nil {
		return err
	}
	if err := unix.PtraceInterrupt(pid); err == nil {
		var ws unix.WaitStatus
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if n, err := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil); n == pid || err != nil {
				break
			}
		}
	}
	_ = unix.PtraceDetach(pid)
	return nil
}

// openProcFDs opens every entry of /proc/PID/fd (the first ten numbers
// where the directory cannot be listed): "ok N" when N of them opened a
// private object. One that is also open to this process by its own path
// (/dev/null, a /proc file the helper was reading) gives nothing away and
// is only counted as public: gVisor's /proc/PID/fd (before release
// 20251215) opens whatever the file's own mode allows.
func openProcFDs(pid int) string {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	names, listErr := readNames(dir)
	if listErr != nil {
		for i := range 10 {
			names = append(names, strconv.Itoa(i))
		}
	}
	opened, public, firstErr := 0, 0, listErr
	for _, n := range names {
		fd, err := unix.Open(dir+n, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if openByPath(fd, dir+n) {
			public++
		} else {
			opened++
		}
		unix.Close(fd)
	}
	switch {
	case opened > 0:
		return "ok " + strconv.Itoa(opened)
	case public > 0:
		return "public " + strconv.Itoa(public)
	case firstErr == nil:
		return "none"
	}
	return errnoName(firstErr)
}

// openByPath: the object fd holds (opened through the /proc link) is the
// one this process opens by the link's target path itself.
func openByPath(fd int, link string) bool {
	target, err := os.Readlink(link)
	if err != nil || !strings.HasPrefix(target, "/") {
		return false // a pipe, a socket, an anonymous inode: no path to it
	}
	own, err := unix.Open(target, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer unix.Close(own)
	var a, b unix.Stat_t
	return unix.Fstat(fd, &a) == nil && unix.Fstat(own, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// parentOf is pid's parent from /proc/PID/stat, or 0.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func readlinkOr(p string) string {
	s, _ := os.Readlink(p)
	return s
}

func errOK(err error) string {
	if err == nil {
		return "ok"
	}
	return errnoName(err)
}
