package selftest

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// deviceNodeName is the device node planted in the tool prefix.
const deviceNodeName = "selftest-kmsg"

// plantDeviceNode makes a live host character device node in dir, open to
// anyone: 1:11, the kernel log, whose write-only open checks no privilege
// and changes nothing. PRIV-05 opens it inside where mountinfo cannot show
// nodev (a user-space kernel's). It returns the node's path, or "" when
// this host cannot make one (not root) or does not open it itself (dir on
// a nodev mount): then such a sandbox's PRIV-05 is inconclusive.
func plantDeviceNode(dir string) string {
	path := filepath.Join(dir, deviceNodeName)
	_ = os.Remove(path)
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 11))); err != nil {
		return ""
	}
	// mknod's mode is cut by the umask.
	if err := os.Chmod(path, 0o666); err != nil {
		_ = os.Remove(path)
		return ""
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(path)
		return ""
	}
	_ = unix.Close(fd)
	return path
}
