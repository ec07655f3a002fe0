//go:build linux

package kubecluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
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

// runscBinary is what scripts/gvisor.sh builds.
const runscBinary = "runsc"

// GVisorDir is where scripts/gvisor.sh put runsc:
// $TRIAGE_SANDBOX_GVISOR_DIR, else /var/cache/triage-sandbox/gvisor/VERSION.
// Debian's runsc (20221219) stays the docker and oci backends'.
func GVisorDir() string {
	if d := os.Getenv("TRIAGE_SANDBOX_GVISOR_DIR"); d != "" {
		return d
	}
	return filepath.Join("/var/cache/triage-sandbox/gvisor", GVisorVersion)
}

// gvisorMissing names what the node's gvisor handler lacks ("" nothing).
func gvisorMissing() string {
	var missing []string
	if fi, err := os.Stat(filepath.Join(GVisorDir(), runscBinary)); err != nil || fi.Mode()&0o111 == 0 {
		why := "build it with " + GVisorScript + ", cached afterwards"
		if said := buildError(); said != "" {
			why = GVisorScript + " could not build it: " + said
		}
		missing = append(missing, filepath.Join(GVisorDir(), runscBinary)+" ("+why+")")
	}
	if _, err := exec.LookPath("jq"); err != nil {
		missing = append(missing, "jq (Debian jq; "+BuildScript+" installs it)")
	}
	return strings.Join(missing, ", ")
}

// buildErrorFile is where scripts/gvisor.sh leaves the end of a failed
// build's output.
const buildErrorFile = "build-error"

// buildError is what the last failed build of runsc said, on one line
// ("" none).
func buildError() string {
	b, err := os.ReadFile(filepath.Join(GVisorDir(), buildErrorFile))
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// GVisorMissing says why the node offers no gvisor RuntimeClass, as one
// line with the fix ("" when it does).
func GVisorMissing() string {
	if m := gvisorMissing(); m != "" {
		return "no gvisor RuntimeClass on the test node: missing " + m
	}
	return ""
}

// runscHandler is the containerd configuration of the runtime handler
// that runs gVisor, and the runtime it names, written into dir.
//
// gVisor's own shim (containerd-shim-runsc-v1, a pod as one gVisor
// sandbox) cannot start on a host that withholds CAP_SYS_RESOURCE, as
// this VM does from every process: it sets its own oom_score_adj to -999
// and, run as root, takes the refusal as fatal. So containerd's runc shim
// drives runsc, as Docker does, and each container of a pod is a gVisor
// sandbox of its own, as under Docker: the wrapper (runscWrapper) removes
// the CRI annotations that would make runsc join the pod's first sandbox,
// a model the runc shim was not made for. runsc's flags are every backend's
// (runtimes.Traits.Flags: its own loopback-only network stack, the
// container's seccomp profile loaded inside); the platform is runsc's
// default (systrap: KVM does not start in this VM).
func runscHandler(dir string) (string, error) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		return "", err
	}
	argv := []string{filepath.Join(GVisorDir(), runscBinary)}
	argv = append(argv, runtimes.Of(runscBinary).Flags...)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	script := fmt.Sprintf(runscWrapper, shellQuote(jq), strings.Join(quoted, " "))
	wrapper := filepath.Join(dir, "runsc-wrapper")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return "", err
	}
	return fmt.Sprintf(`    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]
        BinaryName = %q
        Root = %q
`, runscHandlerName, runscHandlerName, wrapper, filepath.Join(dir, "runsc-root")), nil
}

// runscWrapper is the runtime the runc shim runs: on create, the bundle's
// CRI container-type and sandbox-id annotations go (a sandbox per
// container); a kill of a container whose sandbox has ended says "container
// not running", the words the runc shim takes for a process already gone
// (runsc says "sandbox is not running", and containerd's CRI, which kills
// before it deletes an exited task, would retry forever: the kubelet never
// heard of the exit); then runsc with its flags (%%[1]s: jq, %%[2]s: runsc's
// argv).
const runscWrapper = `#!/bin/sh
set -eu
prev= bundle= cmd=
for a in "$@"; do
  case $prev in --bundle|-b) bundle=$a ;; esac
  case $a in create|kill) [ -z "$cmd" ] && cmd=$a ;; esac
  prev=$a
done
if [ "$cmd" = create ] && [ -n "$bundle" ]; then
  %[1]s 'del(.annotations["io.kubernetes.cri.container-type"], .annotations["io.kubernetes.cri.sandbox-id"])' \
    "$bundle/config.json" > "$bundle/config.json.tmp"
  mv "$bundle/config.json.tmp" "$bundle/config.json"
fi
if [ "$cmd" = kill ]; then
  out=$(%[2]s "$@" 2>&1) && exit 0
  case $out in *"is not running"*) echo "container not running: $out" >&2 ;; *) echo "$out" >&2 ;; esac
  exit 1
fi
exec %[2]s "$@"
`

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// createRuntimeClass makes the RuntimeClass name for handler.
func (c *Cluster) createRuntimeClass(name, handler string) error {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
	_, err := c.Client.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating RuntimeClass %s: %w", name, err)
	}
	return nil
}
