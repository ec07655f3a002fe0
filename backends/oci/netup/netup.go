//go:build linux

// Package netup makes network namespaces whose loopback interface is up,
// for containers to join.
//
// runc gives a container a new network namespace whose lo is down, and the
// sandbox has no capability to raise it, so 127.0.0.1 is unusable inside.
// Create makes the namespace on the host beforehand, with lo up, and the
// runtime joins it by path.
//
// Joining a namespace changes only the calling OS thread, and Go may run
// any goroutine on any thread, so the work happens on a goroutine locked
// to its thread that exits still locked: the runtime then ends that thread
// rather than hand a thread inside the container's namespace to other code.
// The main thread is the exception (the runtime parks it forever instead of
// ending it, and /proc/PID/ns/net would then name the container's), so the
// work never runs there.
package netup

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Up sets lo up in the network namespace of pid, checks that it is up and
// has 127.0.0.1, and leaves the caller's own namespace alone. It refuses a
// pid that shares the caller's namespace: that lo is the host's.
func Up(pid int) error {
	if err := up(pid); err != nil {
		return fmt.Errorf("netup: %w", err)
	}
	return nil
}

func up(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("invalid pid %d", pid)
	}
	// Open the namespace once, here: a pid that exits and is reused after
	// this keeps pointing at the namespace we checked.
	ns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return fmt.Errorf("opening the network namespace of pid %d: %w", pid, err)
	}
	defer ns.Close()
	same, err := sameNamespace(ns)
	if err != nil {
		return err
	}
	if same {
		return fmt.Errorf("pid %d shares this process's network namespace; refusing to touch the host's lo", pid)
	}
	if err := onThrowawayThread(func() error { return upIn(int(ns.Fd())) }); err != nil {
		return fmt.Errorf("pid %d: %w", pid, err)
	}
	return nil
}

// onThrowawayThread runs f on an OS thread that is ended afterwards, never
// on the main thread.
func onThrowawayThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread: hold it, so the goroutine below cannot be
			// scheduled onto it, and give it back untouched.
			defer runtime.UnlockOSThread()
			done <- onThrowawayThread(f)
			return
		}
		// No UnlockOSThread: f may leave the thread in another namespace,
		// and a goroutine that exits locked takes its thread with it.
		done <- f()
	}()
	return <-done
}

// sameNamespace reports whether ns is the namespace this thread is in.
func sameNamespace(ns *os.File) (bool, error) {
	var theirs, ours unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &theirs); err != nil {
		return false, err
	}
	if err := unix.Stat("/proc/thread-self/ns/net", &ours); err != nil {
		return false, err
	}
	return theirs.Dev == ours.Dev && theirs.Ino == ours.Ino, nil
}

// upIn runs on a locked thread that it moves into ns for good.
func upIn(ns int) error {
	if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns: %w", err)
	}
	return upHere()
}

// upHere raises lo in this thread's network namespace.
func upHere() error {
	// The socket belongs to the namespace of the thread that creates it:
	// it must be made after setns.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	flags, err := ifFlags(fd)
	if err != nil {
		return err
	}
	if flags&unix.IFF_UP == 0 {
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return err
		}
		ifr.SetUint16(flags | unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("setting lo up: %w", err)
		}
	}
	if flags, err = ifFlags(fd); err != nil {
		return err
	}
	if flags&unix.IFF_UP == 0 {
		return errors.New("lo is still down after SIOCSIFFLAGS")
	}
	return checkLoopbackAddr(fd)
}

func ifFlags(fd int) (uint16, error) {
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return 0, fmt.Errorf("reading lo's flags: %w", err)
	}
	return ifr.Uint16(), nil
}

// checkLoopbackAddr: the kernel gives lo 127.0.0.1/8 when it comes up in a
// new namespace; an absent address would leave 127.0.0.1 unreachable.
func checkLoopbackAddr(fd int) error {
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFADDR, ifr); err != nil {
		return fmt.Errorf("reading lo's address: %w", err)
	}
	addr, err := ifr.Inet4Addr()
	if err != nil {
		return err
	}
	if !net.IP(addr).Equal(net.IPv4(127, 0, 0, 1)) {
		return fmt.Errorf("lo is up with address %v, not 127.0.0.1", net.IP(addr))
	}
	return nil
}

// Create makes a new network namespace whose lo is up (and has 127.0.0.1)
// and keeps it alive by binding it onto path (created if missing), for a
// runtime to join by path. It costs a few system calls where a hook costs
// a process: the namespace is made before the container, not inside its
// start. Remove undoes it.
func Create(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o600)
	if err != nil {
		return fmt.Errorf("netup: %w", err)
	}
	_ = f.Close()
	err = onThrowawayThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		if err := upHere(); err != nil {
			return err
		}
		self := "/proc/thread-self/ns/net"
		if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding the namespace onto %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("netup: %w", err)
	}
	return nil
}

// Remove releases a namespace Create bound onto path; a path that holds
// no namespace (a crash between the two steps) is only removed.
func Remove(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netup: releasing %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netup: %w", err)
	}
	return nil
}
