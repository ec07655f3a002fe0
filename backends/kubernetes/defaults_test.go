//go:build linux

package kubernetes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/kubecluster"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
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
		stdout := judgedSelftest(t, e, string(role), []string{"--role", string(role), "--backend", Name})
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

// TestRenderDefaultConfig: `render --backend kubernetes` of the default
// config plus a namespace and an image renders both roles (exit 0, a pod,
// no accept_weaker), and each default a pod's remoteness chose is said in
// one warning line on stderr: the checkout's copy, and, where no image is
// named, the image's toolchain.
func TestRenderDefaultConfig(t *testing.T) {
	testenv.SkipShort(t, "builds the second binary")
	bin := testenv.KubeBinary(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	for _, d := range []string{root, filepath.Join(dir, "widgets")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, toml string
		said       []string
	}{
		{"namespace and image", "[project]\n[sandbox]\nnamespace = \"x\"\nimage = \"triage-sandbox:latest\"\n", nil},
		{"with a checkout", "[project]\ncheckout = \"../widgets\"\n[sandbox]\nnamespace = \"x\"\nimage = \"triage-sandbox:latest\"\n", []string{"checkout_writes"}},
		{"no image named", "[project]\ncheckout = \"../widgets\"\n[sandbox]\nnamespace = \"x\"\n", []string{"toolchain", "checkout_writes"}},
	} {
		if err := os.WriteFile(filepath.Join(root, "triage.toml"), []byte(tt.toml), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, role := range profiles.Roles() {
			cmd := exec.Command(bin, "render", "--backend", Name, "--role", string(role))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s, %s: %v\n%s", tt.name, role, err, stderr.String())
			}
			var art struct {
				Pod struct {
					Kind string `json:"kind"`
				} `json:"pod"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &art); err != nil || art.Pod.Kind != "Pod" {
				t.Errorf("%s, %s: no pod rendered (%v): %.200s", tt.name, role, err, stdout.String())
			}
			var said []string
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if k, ok := strings.CutPrefix(line, "triage-sandbox: warning: "); ok && strings.Contains(line, "run on other machines") {
					k, _, _ = strings.Cut(k, ":")
					said = append(said, k)
				}
			}
			if !slices.Equal(said, tt.said) {
				t.Errorf("%s, %s: said %v, want %v:\n%s", tt.name, role, said, tt.said, stderr.String())
			}
		}
	}
}
