// Package launch is how a backend lays out triage-sandbox's own machinery
// in a container sandbox: where the static binary sits, the specs its
// holder, supervisor and exporter are started with (package protocol), and
// the mounts the machinery needs (scratch, traversable image directories,
// staged writable paths). Every container renderer uses it, so docker, oci
// and local start the same holder the same way.
package launch

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/staging"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// InitPath is where container backends mount the static triage-sandbox
// binary: the sandbox's holder and its per-command supervisor.
const InitPath = protocol.InitPath

// ExecSpec is the in-sandbox supervisor's spec for cmd: the policy's
// grace, the command's timeout and, when the command has no input, its
// stdin as a lifeline. Every backend with a supervisor uses it.
func ExecSpec(p *policy.Policy, cmd backends.Command) protocol.Exec {
	dir := cmd.Workdir
	if dir == "" {
		dir = p.Workdir
	}
	return protocol.Exec{Argv: cmd.Argv, Dir: dir, Timeout: protocol.Duration(cmd.Timeout),
		Grace: protocol.Duration(p.Lifetime.KillGrace), Lifeline: cmd.Stdin == nil}
}

// Rlimits are the policy's rlimits as the supervisor's spec carries them
// (protocol.Exec.Rlimits), for a backend that cannot give its command
// rlimits otherwise; nproc > 0 adds RLIMIT_NPROC (gVisor's process limit).
func Rlimits(p *policy.Policy, nproc int64) []protocol.Rlimit {
	var out []protocol.Rlimit
	for _, r := range p.Rlimits() {
		out = append(out, protocol.Rlimit{Name: r.Name, Value: uint64(r.Value)})
	}
	if nproc > 0 {
		out = append(out, protocol.Rlimit{Name: "NPROC", Value: uint64(nproc)})
	}
	return out
}

// ExecArgv is the supervisor's argv for spec, at InitPath.
func ExecArgv(spec protocol.Exec) []string {
	return protocol.MustArgv(InitPath, protocol.EntryExec, spec)
}

// HoldSpec is the holder's spec: the sandbox's lifeline, its backends.TTL and the
// staged paths it unpacks first.
func HoldSpec(p *policy.Policy, ttl time.Duration) protocol.Hold {
	in, _ := staging.StagePaths(p)
	h := protocol.Hold{Lifeline: p.Lifetime.Lifeline, TTL: protocol.Duration(ttl.Round(time.Second)), Stage: in}
	if p.Network.Mode == policy.NetworkProxy {
		h.Forward = &protocol.Forward{Listen: egress.ForwardAddr, Socket: egress.SocketInSandbox}
	}
	return h
}

// EgressDir is where the proxy's socket directory is bound in the sandbox
// (read-only): the parent of egress.SocketInSandbox.
var EgressDir = path.Dir(egress.SocketInSandbox)

// egressPlaceholder stands for the run's socket directory in a rendering
// made without a run (`render`); a start refuses it (EgressSource).
const egressPlaceholder = "/nonexistent/the-run's-egress-proxy-socket-directory"

// EgressSource is the host directory to bind at EgressDir for p, "" when
// p has no allow-list. A start (forStart) refuses a policy that has one
// but no socket: the holder would forward to nothing, and the command see
// a network that fails instead of a refusal.
func EgressSource(p *policy.Policy, forStart bool) (string, error) {
	if p.Network.Mode != policy.NetworkProxy {
		return "", nil
	}
	if p.Network.SocketDir == "" {
		if forStart {
			return "", fmt.Errorf("network allow-list (%s) without the run's proxy socket: start it through package sandbox, which starts the proxy", p.Network.Key)
		}
		return egressPlaceholder, nil
	}
	return p.Network.SocketDir, nil
}

// ScratchModes are the modes the holder gives the scratch directories at
// sp (the renderer's places for them): the policy's, whatever the runtime
// left on the tmpfs.
func ScratchModes(p *policy.Policy, sp policy.ScratchPaths) []protocol.DirMode {
	return []protocol.DirMode{{Path: sp.Home, Mode: p.Scratch.HomeMode}, {Path: sp.Tmp, Mode: p.Scratch.TmpMode}}
}

// HoldArgv is the holder's argv for spec, at InitPath.
func HoldArgv(spec protocol.Hold) []string {
	return protocol.MustArgv(InitPath, protocol.EntryHold, spec)
}

// HostsContent is the /etc/hosts of a sandbox whose network is its own
// loopback (the oci bundle's, and the docker backend's where the daemon
// makes no network for it): the names it resolves with no DNS, as Docker
// writes them for --network none. An image's root has an empty
// /etc/hosts, so without it getaddrinfo("localhost") asked a DNS server
// the sandbox cannot reach (EAI_AGAIN), and every test server on
// http://localhost failed.
const HostsContent = "127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"ff00::0\tip6-mcastprefix\n" +
	"ff02::1\tip6-allnodes\n" +
	"ff02::2\tip6-allrouters\n"

// IdentityCaps are the capabilities a helper started as root holds until
// it takes the sandbox identity (runtimes.Traits.HelpersStartAsRoot):
// switching uid and gid and emptying the bounding set, nothing else.
var IdentityCaps = []string{"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"}

// RunAs is the identity a helper (holder, supervisor, exporter) takes
// first of all when the runtime starts it as root (asRoot:
// runtimes.Traits.HelpersStartAsRoot), nil otherwise. It goes into the
// helper's typed spec before its argv is encoded; an identity the helper
// would refuse (root) is refused here.
func RunAs(p *policy.Policy, asRoot bool) (*protocol.Identity, error) {
	if !asRoot {
		return nil, nil
	}
	id := &protocol.Identity{UID: p.User.UID, GID: p.User.GID}
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("the sandbox identity %d:%d: %w", id.UID, id.GID, err)
	}
	return id, nil
}

// ScratchMountOptions are the tmpfs options of the policy's scratch, the
// same for every container renderer: size, nosuid, nodev, exec or noexec.
func ScratchMountOptions(s policy.Scratch) []string {
	opts := []string{fmt.Sprintf("size=%d", s.Size)}
	if s.NoSuid {
		opts = append(opts, "nosuid")
	}
	if s.NoDev {
		opts = append(opts, "nodev")
	}
	if s.Exec {
		return append(opts, "exec")
	}
	return append(opts, "noexec")
}

// TraversableMountOptions are the tmpfs options that make a closed image
// directory (policy.Traversable) searchable: empty, tiny, nothing
// executable or set-id, owned by the sandbox identity (Docker keeps the
// image directory's 0700 mode on a tmpfs mounted over it, so ownership is
// what opens it).
func TraversableMountOptions(p *policy.Policy) []string {
	return []string{"mode=0755", "size=65536", "nosuid", "nodev", "noexec",
		fmt.Sprintf("uid=%d", p.User.UID), fmt.Sprintf("gid=%d", p.User.GID)}
}

// ExportSpec is what the exporter sends back for p: the writable paths,
// then the skeletons whose other writes it names, each staged directory
// bounded by the staged filesystems' inode bound.
func ExportSpec(p *policy.Policy) protocol.Export {
	_, out := staging.StagePaths(p)
	return protocol.Export{Stage: staging.ExportPaths(p, out), MaxEntries: max(int(p.Staging.Inodes), 0)}
}

// ExportArgv is the exporter's argv for p, at InitPath.
func ExportArgv(p *policy.Policy) []string { return ExportSpecArgv(ExportSpec(p)) }

// ExportSpecArgv is the exporter's argv for spec, at InitPath.
func ExportSpecArgv(spec protocol.Export) []string {
	return protocol.MustArgv(InitPath, protocol.EntryExport, spec)
}

// WithExport is spec for a runtime that can pass the exec an extra
// descriptor (runc exec --preserve-fds): the supervisor writes the staged
// paths to fd once the command's tree is gone, so the copy back needs no
// second exec. Nothing staged, nothing changed.
func WithExport(spec protocol.Exec, p *policy.Policy, fd int) protocol.Exec {
	if _, out := staging.StagePaths(p); len(out) == 0 {
		return spec
	}
	e := ExportSpec(p)
	spec.ExportFD, spec.Export = fd, &e
	return spec
}

// StagedMounts are the staged filesystems a container renderer mounts:
// path to tmpfs options (size, inodes, nosuid, nodev, owned by the sandbox
// identity). Writable directories and skeletons each get one.
func StagedMounts(p *policy.Policy) map[string]string {
	if !p.Staged() {
		return nil
	}
	opts := strings.Join([]string{"rw", "nosuid", "nodev", "exec",
		fmt.Sprintf("size=%d", p.Staging.Size), fmt.Sprintf("nr_inodes=%d", p.Staging.Inodes), "mode=0755",
		fmt.Sprintf("uid=%d", p.User.UID), fmt.Sprintf("gid=%d", p.User.GID)}, ",")
	out := map[string]string{}
	for _, s := range p.Staging.Skeletons {
		out[s] = opts
	}
	for _, m := range p.Mounts {
		if !m.ReadOnly && m.Kind != "file" {
			out[m.Path] = opts
		}
	}
	return out
}
