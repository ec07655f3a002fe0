package confine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// Credentials are per thread, and Go runs goroutines on any of its threads
// and forks from any of them, so every change here is made on all threads
// at once: psx (or syscall's own all-threads versions for the ids).

// Securebits (include/uapi/linux/securebits.h).
const (
	secbitNoroot                = 1 << 0
	secbitNorootLocked          = 1 << 1
	secbitKeepCapsLocked        = 1 << 5
	secbitNoCapAmbientRaise     = 1 << 6
	secbitNoCapAmbientRaiseLock = 1 << 7

	// lockedSecurebits: a uid 0 inside gains no capabilities by exec
	// (NOROOT), ambient capabilities can never be raised again, and
	// keep-caps stays off; all locked.
	lockedSecurebits = secbitNoroot | secbitNorootLocked | secbitKeepCapsLocked |
		secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLock
)

// dropPrivileges switches to uid and gid and leaves no capability in any
// set, on every thread; it needs CAP_SETPCAP, CAP_SETUID and CAP_SETGID
// (the helper's until now). The bounding set is the forking thread's
// alone, emptied before (see DropForkerBounding).
func dropPrivileges(uid, gid int) error {
	if err := llsyscall.AllThreadsPrctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	if err := llsyscall.AllThreadsPrctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	if err := switchIDs(uid, gid); err != nil {
		return err
	}
	if err := clearCapabilities(); err != nil {
		return err
	}
	// Changing ids clears the parent-death signal, so the helper would
	// outlive a crashed orchestrator: set it again.
	if err := llsyscall.AllThreadsPrctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	// Non-dumpable (changing ids already made it so, unless they stayed the
	// same): the holder's /proc entries (fd, environ, mem) stay closed to
	// the commands it starts, which run as the same uid. They become
	// dumpable themselves when they exec.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("dumpable: %w", err)
	}
	return nil
}

// DropForkerBounding empties the bounding set of the calling thread alone,
// which the caller has locked, and returns the thread's id, for Restrict.
// The bounding set is per thread and a fork copies the forking thread's
// alone, so it is the forking thread's set that bounds what the sandbox's
// processes could ever gain by exec: the helper runs it on the thread it
// then starts every child from (sandboxinit.Thread, the warden's), and
// spares its other threads forty-odd all-thread calls, each a stop of every
// thread (a fifth of a cold run's CPU, measured). The other threads hold no
// capability either, after Restrict, with no_new_privs and securebits
// locked; Restrict's check requires this thread's set to be empty.
func DropForkerBounding() (tid int, err error) {
	if err := checkHelper(); err != nil {
		return 0, fmt.Errorf("confine: bounding set: %w", err)
	}
	if err := dropBounding(); err != nil {
		return 0, fmt.Errorf("confine: %w", err)
	}
	return unix.Gettid(), nil
}

// dropBounding empties the calling thread's bounding set, capability by
// capability, up to the first number the kernel does not know.
func dropBounding() error {
	for c := uintptr(0); c < 64; c++ {
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading capability %d of the bounding set: %w", c, err)
		}
		if in == 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// switchIDs sets real, effective and saved ids, and empties the
// supplementary groups where the user namespace allows setgroups (it does
// not when an unprivileged caller made it; then the caller's own groups
// stay).
func switchIDs(uid, gid int) error {
	b, err := os.ReadFile("/proc/self/setgroups")
	if err != nil {
		return fmt.Errorf("reading /proc/self/setgroups: %w", err)
	}
	if strings.TrimSpace(string(b)) == "allow" {
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setresgid %d: %w", gid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setresuid %d: %w", uid, err)
	}
	return nil
}

// clearCapabilities empties the effective, permitted and inheritable sets.
// Leaving uid 0 already does; staying at uid 0, or at an unprivileged
// caller's uid with ambient capabilities, does not.
func clearCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, errno := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if errno != 0 {
		return fmt.Errorf("capset: %w", errno)
	}
	return nil
}
