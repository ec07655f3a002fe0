package local

import (
	"fmt"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/inside/confine"
)

// Layers implements backends.LayerReporter.
func (b *Backend) Layers() []backends.Layer {
	s := confine.Probe()
	var out []backends.Layer
	for _, l := range []struct {
		name  string
		layer confine.Layer
	}{{"user namespaces", s.UserNS}, {"unprivileged user namespaces", s.UnprivilegedUserNS},
		{fmt.Sprintf("Landlock (ABI %d, need %d)", s.LandlockABI, MinLandlockABI), s.Landlock},
		{"seccomp", s.Seccomp}, {"cgroup " + s.CgroupVersion, s.Cgroup}} {
		avail := l.layer.Available
		if l.layer == s.Landlock && s.LandlockABI < MinLandlockABI {
			avail = false
		}
		out = append(out, backends.Layer{Name: l.name, Available: avail, Detail: l.layer.Detail, Cost: l.layer.Cost})
	}
	return out
}

// missingLayers names every confinement layer this machine lacks and what
// it costs; the local backend runs with all of them or not at all.
func missingLayers(s confine.Support) error {
	var missing []string
	for _, l := range []struct {
		name  string
		layer confine.Layer
	}{{"user namespaces", s.UserNS}, {"Landlock", s.Landlock}, {"seccomp", s.Seccomp}} {
		if !l.layer.Available {
			missing = append(missing, fmt.Sprintf("%s (%s; without it %s)", l.name, l.layer.Detail, l.layer.Cost))
		}
	}
	if s.Landlock.Available && s.LandlockABI < MinLandlockABI {
		missing = append(missing, fmt.Sprintf("Landlock ABI %d (this kernel has %d; without it renames between directories and truncating outputs fail)", MinLandlockABI, s.LandlockABI))
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the local backend cannot confine here: missing %s; use the docker or oci backend", strings.Join(missing, "; "))
}
