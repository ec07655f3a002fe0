//go:build linux

package kubecluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GVisorClass is the RuntimeClass of the node's runsc handler.
const GVisorClass = "gvisor"

// runscHandlerName is the containerd runtime handler running runsc.
const runscHandlerName = "runsc"

// runscHandler is the containerd configuration of a runtime handler that
// runs gVisor: Debian packages runsc without its containerd shim, so
// containerd's runc shim drives it (runsc speaks runc's command line, as
// under Docker), each container of a pod a gVisor sandbox of its own with
// only a loopback (--network=none: the pods here have no network anyway),
// the container's seccomp profile loaded inside (--oci-seccomp).
func runscHandler(dir, runsc string) (string, error) {
	wrapper := filepath.Join(dir, "runsc-wrapper")
	script := fmt.Sprintf("#!/bin/sh\nexec %q --network=none --oci-seccomp \"$@\"\n", runsc)
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

// createRuntimeClass makes the RuntimeClass name for handler.
func (c *Cluster) createRuntimeClass(name, handler string) error {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
	_, err := c.Client.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating RuntimeClass %s: %w", name, err)
	}
	return nil
}
