package docker

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
)

// Layers implements backends.LayerReporter: the mandatory access control
// Docker adds when the host has it. Docker applies its AppArmor profile
// only where AppArmor is enabled; elsewhere the container's confinement
// is namespaces, capabilities, seccomp and the read-only mounts alone.
func (b *Backend) Layers() []backends.Layer { return lsmLayers("/") }

// lsmLayers reads the host's security modules under root (a test's fake
// sysfs, or /).
func lsmLayers(root string) []backends.Layer {
	read := func(p string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(root, p))
		return strings.TrimSpace(string(b)), err == nil
	}
	lsm, ok := read("sys/kernel/security/lsm")
	if !ok {
		lsm = "unknown (no /sys/kernel/security/lsm; securityfs not mounted)"
	}
	apparmor, _ := read("sys/module/apparmor/parameters/enabled")
	selinux, hasSELinux := read("sys/fs/selinux/enforce")
	return []backends.Layer{
		{Name: "security modules", Available: true, Detail: "active: " + lsm},
		{Name: "AppArmor (Docker's default profile)", Available: apparmor == "Y",
			Detail: map[bool]string{true: "enabled", false: "not enabled on this host"}[apparmor == "Y"],
			Cost:   "containers get no AppArmor profile: their confinement is namespaces, no capabilities, seccomp and read-only mounts"},
		{Name: "SELinux", Available: hasSELinux && selinux == "1",
			Detail: map[bool]string{true: "enforcing", false: "not enforcing or absent"}[hasSELinux && selinux == "1"],
			Cost:   "no SELinux labels on the containers (Docker labels them only where SELinux enforces)"},
	}
}
