//go:build linux

package kubernetes

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestSelftestDefaultConfig: `selftest --backend kubernetes` passes both
// roles from the default triage.toml plus a namespace and an image, with
// the node's policy controller running: no accept_weaker, the defaults'
// limits (CPUs, memory, pids), own_loopback and pids_limit proven at
// start. The loopback checks and the fork past the pids limit run (none
// not applicable), and the reproducer's fork (pids 1024) is stopped below
// the node's podPidsLimit (512): by the kubelet's limit.
func TestSelftestDefaultConfig(t *testing.T) {
	kubecluster.RequirePolicy(t)
	e := cliWorkspace(t, "", "")
	// The node's image cliWorkspace made (the sandbox image with this
	// build's binary), as its triage.toml names it.
	text, err := os.ReadFile(filepath.Join(e.root, "triage.toml"))
	if err != nil {
		t.Fatal(err)
	}
	image := m2(regexp.MustCompile(`(?m)^image = "([^"]+)"$`).FindStringSubmatch(string(text)))
	if image == "" {
		t.Fatalf("no image in the workspace's triage.toml:\n%s", text)
	}
	toml := fmt.Sprintf("[project]\n[sandbox]\nnamespace = %q\nimage = %q\n", e.ns, image)
	if err := os.WriteFile(filepath.Join(e.root, "triage.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, n, _ := node(t)
	if err := c.StartPolicy(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StopPolicy(n) })
	for _, role := range profiles.Roles() {
		for try := 1; ; try++ {
			start := time.Now()
			stdout, stderr, runErr := e.run("selftest", "--json", "--role", string(role), "--backend", Name)
			t.Logf("%s: selftest in %s (try %d)", role, time.Since(start).Round(time.Second), try)
			if try == 1 && onlyInconclusive(stdout) {
				t.Logf("%s: only inconclusive results, once more:\n%s", role, stdout)
				continue
			}
			judgeSelftest(t, stdout, stderr, runErr)
			ran := ranChecks(t, stdout)
			for _, id := range []string{"NET-11", "NET-12", "RES-01"} {
				if _, ok := ran[id]; !ok {
					t.Errorf("%s: %s did not run (not applicable, or absent)", role, id)
				}
			}
			if role == profiles.RoleReproducer {
				m := regexp.MustCompile(`after (\d+) processes`).FindStringSubmatch(ran["RES-01"])
				if forked, _ := strconv.Atoi(m2(m)); forked == 0 || forked >= kubecluster.PodPidsLimit {
					t.Errorf("reproducer RES-01: %q; want a fork stopped below the node's podPidsLimit %d", ran["RES-01"], kubecluster.PodPidsLimit)
				}
			}
			break
		}
	}
	e.awaitEmpty(t, time.Minute)
}

func m2(m []string) string {
	if len(m) < 2 {
		return ""
	}
	return m[1]
}

// ranChecks is each check of a one-role selftest --json report that ran
// and passed, with its evidence.
func ranChecks(t *testing.T, stdout string) map[string]string {
	t.Helper()
	var rep struct {
		Roles []struct {
			Checks []struct {
				ID, Status, Evidence string
				OK                   bool
			} `json:"checks"`
		} `json:"roles"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("selftest report: %v", err)
	}
	out := map[string]string{}
	for _, r := range rep.Roles {
		for _, ch := range r.Checks {
			if ch.OK && ch.Status != "n/a" {
				out[ch.ID] = ch.Evidence
			}
		}
	}
	return out
}
