package oci

import (
	"slices"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestBindsNoSuidNoDev: every host directory bound in, the host
// toolchain's /usr with its setuid su, mount and passwd first of all, is
// nosuid and nodev: a set-id bit or a device node there means nothing
// inside, whatever no_new_privs does.
func TestBindsNoSuidNoDev(t *testing.T) {
	for _, role := range profiles.Roles() {
		t.Run(string(role), func(t *testing.T) {
			p := buildPolicy(t, role, "")
			s := render(t, p, backends.Command{Argv: []string{"true"}, Timeout: time.Minute})
			usr := false
			for _, m := range s.Mounts {
				if m.Type != "bind" {
					continue
				}
				usr = usr || m.Destination == "/usr"
				if !slices.Contains(m.Options, "nosuid") || !slices.Contains(m.Options, "nodev") {
					t.Errorf("bind %s options %q: not nosuid,nodev", m.Destination, m.Options)
				}
			}
			if !usr {
				t.Errorf("no bind of the host toolchain's /usr to check")
			}
		})
	}
}
