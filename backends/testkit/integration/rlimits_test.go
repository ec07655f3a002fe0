//go:build linux

package integration_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestRlimitsHold: on every backend the command runs under the policy's
// rlimits (policy.Policy.Rlimits): its open files and core size, and a
// write past its file size fails at the limit. backends/testkit/conformance
// checks each rendering; this checks what the runtime made of it.
func TestRlimitsHold(t *testing.T) {
	forEachBackendAnd(t, []string{gvisor, dockerGVisor}, func(t *testing.T, k *kit) {
		p := k.build(t, newFixture(t), profiles.RoleReproducer, currentHost(t))
		p.Limits.FileSize = 1 << 20
		out := k.run(t, p, time.Minute, "sh", "-c",
			`echo $(ulimit -n) $(ulimit -c); head -c 3000000 /dev/zero > "${TMPDIR:-/tmp}/big"; echo big=$?; wc -c < "${TMPDIR:-/tmp}/big"`)
		got := strings.Fields(out.stdout)
		want := []string{fmt.Sprint(p.Limits.NoFile), "0"}
		if out.res.ExitCode != 0 || len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] == "big=0" || got[3] != "1048576" {
			t.Errorf("open files, core, the 3 MB write and its size: %q (%+v, %q); want %s, a failed write, 1048576 bytes",
				out.stdout, out.res, out.stderr, strings.Join(want, " "))
		}
	})
}
