package confine

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// errNotHelper is what Enter says when it is called anywhere but in the
// helper Namespaces starts.
var errNotHelper = errors.New("Enter runs only in the helper started with Namespaces " +
	"(pid 1 of a new pid namespace, in a new user namespace, with CAP_SYS_ADMIN there)")

// checkHelper refuses to go on unless this process is pid 1 of its own pid
// namespace, in a user namespace other than the host's, holding
// CAP_SYS_ADMIN: Enter remounts the caller's mount namespace, and must never
// do it to the orchestrator's, which is the host's.
func checkHelper() error {
	if os.Getpid() != 1 {
		return fmt.Errorf("%w: this is pid %d", errNotHelper, os.Getpid())
	}
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return fmt.Errorf("%w: reading uid_map: %v", errNotHelper, err)
	}
	// The initial user namespace maps every id to itself.
	if f := strings.Fields(string(b)); len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295" {
		return fmt.Errorf("%w: this is the host's user namespace", errNotHelper)
	}
	caps, err := capabilities()
	if err != nil {
		return err
	}
	if caps[0].Effective&(1<<unix.CAP_SYS_ADMIN) == 0 {
		return fmt.Errorf("%w: CAP_SYS_ADMIN is not effective", errNotHelper)
	}
	return nil
}

// capabilities reads the calling thread's capability sets.
func capabilities() ([2]unix.CapUserData, error) {
	var data [2]unix.CapUserData
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return data, fmt.Errorf("capget: %w", err)
	}
	return data, nil
}
