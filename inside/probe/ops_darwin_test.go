package probe

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// NET-13 asks for family 40: AF_VSOCK on Linux and here.
func TestVsockFamily(t *testing.T) {
	if unix.AF_VSOCK != 40 {
		t.Fatalf("AF_VSOCK is %d on macOS", unix.AF_VSOCK)
	}
}

func TestPtyRoundTrip(t *testing.T) {
	if err := ptyRoundTrip(); err != nil {
		t.Fatal(err)
	}
}

func TestForkPaused(t *testing.T) {
	pid, err := forkPaused()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Signaled() {
		t.Fatalf("wait: %v %v", ws, err)
	}
}
