package probe

import (
	"errors"
	"os"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// macOS has no /proc, namespaces or prctl: these observe Unsupported (the
// checks using them require pid_namespace or syscall_filter).
func opProcScan(Step, string) Observation   { return unsupported("proc_scan") }
func opProcMem(Step, string) Observation    { return unsupported("proc_mem") }
func opProcStatus(Step, string) Observation { return unsupported("proc_status") }
func opUnshare(Step, string) Observation    { return unsupported("unshare") }
func opSuidMounts(Step, string) Observation { return unsupported("suid_mounts") }
func opPtraceHelpers(Step, string) Observation {
	return unsupported("ptrace_helpers")
}

// opTIOCSTI pushes a byte into the controlling terminal's input queue, the
// keystroke-injection trick (CVE-2017-5226). Blocked means there is no
// controlling terminal to open or the ioctl is refused. TIOCSTI reads one
// char through the pointer; the int32 holding '#' starts with it on every
// macOS (little-endian).
func opTIOCSTI(s Step, _ string) Observation {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "no controlling terminal"}
	}
	defer f.Close()
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCSTI, '#'); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return Observation{OK: true, Detail: "injected a byte into the terminal's input"}
}

// ptyRoundTrip opens a pty pair (posix_openpt's ioctls) and sends a line
// through it. The master from pty.Open is a blocking file, so the read
// gets its deadline from a timer, not SetReadDeadline.
func ptyRoundTrip() error {
	master, slave, err := pty.Open()
	if err != nil {
		return err
	}
	defer master.Close()
	defer slave.Close()
	if _, err := slave.Write([]byte("ping\n")); err != nil {
		return err
	}
	read := make(chan error, 1)
	go func() {
		_, err := master.Read(make([]byte, 16))
		read <- err
	}()
	select {
	case err := <-read:
		return err
	case <-time.After(2 * time.Second):
		return errors.New("pty: nothing came back in 2s")
	}
}
