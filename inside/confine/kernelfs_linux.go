package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mountProc mounts a fresh proc at /proc. Enter runs as pid 1 of the new pid
// namespace, so it lists the sandbox's processes only.
func (t *tree) mountProc() error {
	mfd, err := newFS("proc", nil, attrsSafe|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("/proc: %w", err)
	}
	defer unix.Close(mfd)
	if err := t.mountOn(mfd, "/proc", true); err != nil {
		return fmt.Errorf("/proc: %w", err)
	}
	return nil
}

// mountSys mounts a fresh read-only sysfs at /sys. It belongs to the new
// network namespace: /sys/class/net holds lo only.
func (t *tree) mountSys() error {
	mfd, err := newFS("sysfs", nil, attrsRO|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("/sys: %w", err)
	}
	defer unix.Close(mfd)
	if err := t.mountOn(mfd, "/sys", true); err != nil {
		return fmt.Errorf("/sys: %w", err)
	}
	return nil
}
