package sandboxinit

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// takeIdentity makes a helper started as root (protocol.Identity) the
// sandbox identity before it does anything else: no capability left in
// any set, on any thread (the command is forked from whichever thread),
// no supplementary group. Whatever remains is refused: a helper that
// kept a capability would hand it to the command.
func takeIdentity(id *protocol.Identity) error {
	if id == nil {
		return nil
	}
	if err := dropBounding(); err != nil {
		return fmt.Errorf("taking the sandbox identity: %w", err)
	}
	// syscall's set*id calls change every thread of the process.
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("taking the sandbox identity: clearing the groups: %w", err)
	}
	if err := syscall.Setresgid(id.GID, id.GID, id.GID); err != nil {
		return fmt.Errorf("taking the sandbox identity: gid %d: %w", id.GID, err)
	}
	// From root to a uid above 0: the kernel clears the permitted and
	// effective sets (no keep-caps was asked for).
	if err := syscall.Setresuid(id.UID, id.UID, id.UID); err != nil {
		return fmt.Errorf("taking the sandbox identity: uid %d: %w", id.UID, err)
	}
	return checkIdentity(id)
}

// dropBounding empties the capability bounding set of every thread (the
// set is per thread; PR_CAPBSET_DROP needs CAP_SETPCAP, still held).
func dropBounding() error {
	caps, err := bounding()
	if err != nil {
		return err
	}
	for _, c := range caps {
		if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); errno != 0 {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, errno)
		}
	}
	return nil
}

// bounding lists the capabilities in this thread's bounding set.
func bounding() ([]int, error) {
	var caps []int
	for c := 0; c <= 63; c++ {
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		}
		if err != nil {
			return nil, fmt.Errorf("reading the bounding set: %w", err)
		}
		if in != 0 {
			caps = append(caps, c)
		}
	}
	return caps, nil
}

// checkIdentity confirms the switch: the ids asked for, and no capability
// permitted, effective, inheritable or bounding.
func checkIdentity(id *protocol.Identity) error {
	ruid, euid, suid := unix.Getresuid()
	if ruid != id.UID || euid != id.UID || suid != id.UID || syscall.Getgid() != id.GID || syscall.Getegid() != id.GID {
		return fmt.Errorf("taking the sandbox identity: still uid %d/%d/%d gid %d/%d", ruid, euid, suid, syscall.Getgid(), syscall.Getegid())
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("taking the sandbox identity: reading the capabilities: %w", err)
	}
	for _, d := range data {
		if d.Permitted|d.Effective|d.Inheritable != 0 {
			return fmt.Errorf("taking the sandbox identity: capabilities remain (permitted %#x, effective %#x, inheritable %#x)", d.Permitted, d.Effective, d.Inheritable)
		}
	}
	if caps, err := bounding(); err != nil || len(caps) > 0 {
		return fmt.Errorf("taking the sandbox identity: the bounding set keeps %v (%v)", caps, err)
	}
	return nil
}
