// Package builtin returns the registry of the backends this module ships.
// The CLI and the tests make backends through it, and help texts and
// config validation take the backend names from it, so a backend is added
// here once and nowhere else in the wiring.
package builtin

import (
	"os"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
	"github.com/triage-sandbox/triage-sandbox/backends/oci/rootfs"
	"github.com/triage-sandbox/triage-sandbox/backends/seatbelt"
)

// Registry returns a new registry with every built-in backend: docker,
// oci, seatbelt, local and kubernetes. Without the build tag kubernetes
// (kubecaps.BuildTag) the kubernetes entry only declares the backend: its
// capabilities, so policies compile, and a New that refuses; the CLI hands
// such a run to the second binary that has it (the entry's Binary). That keeps
// client-go out of the default binary's size and start-up.
func Registry() *backends.Registry {
	r := backends.NewRegistry()
	r.Register(backends.Entry{
		Name:         docker.Name,
		Summary:      "a hardened container through the Docker daemon; the only one for network = true",
		Capabilities: docker.Capabilities,
		New:          docker.New,
	})
	r.Register(backends.Entry{
		Name:         oci.Name,
		Summary:      "the same container run by runc, crun or runsc directly, no daemon (Linux, root)",
		Capabilities: oci.Capabilities,
		New:          newOCI,
	})
	r.Register(backends.Entry{
		Name:         seatbelt.Name,
		Summary:      "macOS sandbox-exec with an SBPL profile rendered from the policy",
		Capabilities: seatbelt.Capabilities,
		New:          seatbelt.New,
	})
	r.Register(backends.Entry{
		Name:         local.Name,
		Summary:      "confined host processes (Linux namespaces, Landlock, seccomp), no container runtime",
		Capabilities: local.Capabilities,
		New:          local.New,
	})
	registerKubernetes(r)
	return r
}

// newOCI makes the oci backend with its image roots unpacked into the
// user's cache, shared by every sandbox.
func newOCI(env backends.Env) (backends.Backend, error) {
	home, _ := os.UserHomeDir()
	b, err := oci.New(env, &oci.CachedRoots{Cache: rootfs.Cache{Dir: rootfs.DefaultDir(home, os.LookupEnv)}})
	if err != nil {
		return nil, err
	}
	return b, nil
}
