package docker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"syscall"

	"github.com/moby/moby/api/types/mount"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
)

// A sandbox whose network is its own loopback (network "none": the
// loopback policy, and the allow-list's, whose way out is the proxy's
// socket bound in) is created with the network disabled, not through
// libnetwork's "none" network. The namespace is the same: a new one with
// only lo, up (runc makes it, as it does for the oci backend). What the
// daemon no longer does is libnetwork's sandbox for it: a re-exec of
// dockerd as the runtime's prestart hook (libnetwork-setkey) on every
// start, about 140 ms of CPU a container here, on the start's path.
//
// The daemon then writes no /etc/hosts, so the backend binds its own,
// read-only (launch.HostsContent, the oci bundle's). Only on Linux and
// Docker's own engine: a daemon in a VM (Docker Desktop) sees the host's
// files only where they are shared, and Podman's compatible API is not
// known to keep the namespace for a disabled network; both keep "none".

// hostsPath is the hosts file this user's sandboxes bind, beside their
// control sockets.
func hostsPath() string { return filepath.Join(controlDir(), "hosts") }

// ownLoopback reports whether a start on engine eng may disable the
// network of a sandbox whose network mode is "none".
func ownLoopback(eng Engine, req *CreateRequest) bool {
	return goruntime.GOOS == "linux" && !eng.IsPodman() && req.HostConfig.NetworkMode == "none"
}

// withOwnLoopback disables req's network and binds the hosts file at
// /etc/hosts, written (or rewritten) first when it is not exactly ours.
func withOwnLoopback(req *CreateRequest) error {
	path := hostsPath()
	if err := ensureHosts(path); err != nil {
		return err
	}
	req.Config.NetworkDisabled = true
	req.HostConfig.Mounts = append(req.HostConfig.Mounts, mount.Mount{
		Type: mount.TypeBind, Source: path, Target: "/etc/hosts", ReadOnly: true,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
	})
	return nil
}

// ensureHosts makes path hold exactly launch.HostsContent, mode 0644, in a
// directory that is this user's alone; a file that differs in any way (a
// symlink, another owner or mode, other bytes) is replaced by rename, so
// a start never binds what it did not check.
func ensureHosts(path string) error {
	dir := filepath.Dir(path)
	if err := hostfs.PrivateDir(dir); err != nil {
		return fmt.Errorf("the sandbox's hosts file: %w", err)
	}
	if hostsIntact(path) {
		return nil
	}
	tmp, err := os.CreateTemp(dir, ".hosts-*")
	if err != nil {
		return fmt.Errorf("writing the sandbox's hosts file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(launch.HostsContent)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		return fmt.Errorf("writing the sandbox's hosts file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the sandbox's hosts file: %w", err)
	}
	return nil
}

// hostsIntact: path is a regular file of this user's, mode 0644, holding
// exactly launch.HostsContent.
func hostsIntact(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && bytes.Equal(b, []byte(launch.HostsContent))
}
