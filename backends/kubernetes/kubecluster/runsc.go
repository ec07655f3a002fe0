//go:build linux

package kubecluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/backends/runtimes"
)

// GVisorClass is the RuntimeClass of the node's runsc handler.
const GVisorClass = "gvisor"

// runscHandlerName is the containerd runtime handler running runsc.
const runscHandlerName = "runsc"

// GVisorVersion is the gVisor version scripts/gvisor/go.mod pins (a test
// checks they agree).
const GVisorVersion = "v0.0.0-20260905035102-160fafc42237"

// GVisorScript builds and caches the gVisor binaries the node runs.
const GVisorScript = "scripts/gvisor.sh"

// The binaries scripts/gvisor.sh builds.
const (
	runscBinary = "runsc"
	shimBinary  = "containerd-shim-runsc-v1"
)

// GVisorDir is where scripts/gvisor.sh put runsc and its containerd shim:
// $TRIAGE_SANDBOX_GVISOR_DIR, else /var/cache/triage-sandbox/gvisor/VERSION.
// Debian's runsc is not used here: it has no containerd shim, and
// containerd's runc shim driving runsc never reports an init container's
// exit to the kubelet.
func GVisorDir() string {
	if d := os.Getenv("TRIAGE_SANDBOX_GVISOR_DIR"); d != "" {
		return d
	}
	return filepath.Join("/var/cache/triage-sandbox/gvisor", GVisorVersion)
}

// gvisorMissing names the gVisor binaries the node lacks ("" none).
func gvisorMissing() string {
	var missing []string
	for _, b := range []string{runscBinary, shimBinary} {
		if fi, err := os.Stat(filepath.Join(GVisorDir(), b)); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, filepath.Join(GVisorDir(), b))
		}
	}
	return strings.Join(missing, ", ")
}

// GVisorMissing says why the node offers no gvisor RuntimeClass, as one
// line with the fix ("" when it does).
func GVisorMissing() string {
	if m := gvisorMissing(); m != "" {
		return "no gvisor RuntimeClass on the test node: missing " + m + "; build them with " + GVisorScript + " (cached afterwards)"
	}
	return ""
}

// runscHandler is the containerd configuration of the runtime handler
// that runs gVisor through its own shim (io.containerd.runsc.v1), and the
// shim's configuration beside it in dir: the runsc it runs, its root, and
// runsc's flags as every backend gives them (runtimes.Traits.Flags: its
// own loopback-only network stack, the container's seccomp profile loaded
// inside). The platform is runsc's default (systrap: KVM does not start in
// this VM). A pod is one gVisor sandbox, its containers in it.
func runscHandler(dir string) (string, error) {
	cfg := filepath.Join(dir, "runsc.toml")
	flags, err := runscConfig(runtimes.Of(runscBinary).Flags)
	if err != nil {
		return "", err
	}
	body := fmt.Sprintf("binary_name = %s\nroot = %s\nlog_path = %s\n[runsc_config]\n%s",
		strconv.Quote(filepath.Join(GVisorDir(), runscBinary)), strconv.Quote(filepath.Join(dir, "runsc-root")),
		strconv.Quote(filepath.Join(dir, "runsc-logs", "%ID%", "shim.log")), flags)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf(`    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]
      runtime_type = "io.containerd.runsc.v1"
      runtime_path = %q
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = %q
`, runscHandlerName, filepath.Join(GVisorDir(), shimBinary), runscHandlerName, cfg), nil
}

// runscConfig turns runsc's command-line flags ("--name=value", "--name")
// into the shim's [runsc_config] table.
func runscConfig(flags []string) (string, error) {
	lines := make([]string, 0, len(flags))
	for _, f := range flags {
		name, value, ok := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if !ok {
			value = "true"
		}
		if !strings.HasPrefix(f, "--") || name == "" {
			return "", fmt.Errorf("runsc flag %q is not --name or --name=value", f)
		}
		lines = append(lines, fmt.Sprintf("  %s = %s\n", strconv.Quote(name), strconv.Quote(value)))
	}
	sort.Strings(lines)
	return strings.Join(lines, ""), nil
}

// createRuntimeClass makes the RuntimeClass name for handler.
func (c *Cluster) createRuntimeClass(name, handler string) error {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
	_, err := c.Client.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating RuntimeClass %s: %w", name, err)
	}
	return nil
}
