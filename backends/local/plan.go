package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/inside/confine"
	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// ScratchPaths is where the local sandbox puts the policy's scratch: in its
// own root, so the same paths as the container backends.
var ScratchPaths = policy.ScratchPaths{Home: "/home/sandbox", Tmp: "/tmp"}

// MinLandlockABI is the Landlock ABI the local backend needs: 2 lets a
// command rename files between directories of its writable paths (ABI 1
// refuses every cross-directory rename), and 3 lets it truncate them
// (ABI 2 cannot grant truncate, so shells' `>` on an existing file fails).
const MinLandlockABI = 3

// Plan translates p into the helper's confinement: the policy's readable
// roots and mounts bound at the same paths (read-only unless writable),
// staged writable paths and scratch on bounded tmpfs, credential paths
// masked, this binary at launch.InitPath, Landlock granting exactly
// those paths, the default seccomp set and the policy's rlimits.
// selfExe is the static binary on the host.
func Plan(p *policy.Policy, selfExe string) (confine.Plan, error) {
	if p.AllowAll {
		return confine.Plan{}, errors.New("allow_all runs unconfined; there is no confinement plan")
	}
	if p.Base.Kind != policy.BaseHost {
		return confine.Plan{}, fmt.Errorf("the local backend reads host roots, the policy has base %q", p.Base.Kind)
	}
	if p.Network.Mode != policy.NetworkLoopback && p.Network.Mode != policy.NetworkProxy {
		return confine.Plan{}, fmt.Errorf("the local backend gives only its own loopback (and a network allow-list through the host's proxy), the policy asks for network %q; use the docker backend, or set %s = false or to a list", p.Network.Mode, p.Network.Key)
	}
	pl := confine.Plan{
		Hostname:   "sandbox",
		Workdir:    p.Workdir,
		UID:        p.User.UID,
		GID:        p.User.GID,
		Sys:        true,
		DevShmSize: p.Limits.ShmSize,
		ReadOnly:   profiles.KernelReadonlyPaths(),
		Landlock:   confine.LandlockPlan{MinABI: MinLandlockABI},
		Seccomp:    confine.SeccompPlan{Set: seccompfilter.Sets()[0]},
	}
	planRoots(&pl, p)
	planMounts(&pl, p)
	planMachinery(&pl, p, selfExe)
	planTmpfs(&pl, p)
	masks := append(append([]string(nil), p.Masked...), profiles.KernelMaskedPaths()...)
	for _, m := range masks {
		pl.Masks = append(pl.Masks, confine.Mask{Path: m, Why: "unreadable"})
	}
	pl.Rlimits = rlimits(p)
	// Mounts go parents first: a staged skeleton before what is bound in it.
	sort.SliceStable(pl.Binds, func(i, j int) bool { return depth(pl.Binds[i].Dest()) < depth(pl.Binds[j].Dest()) })
	sort.SliceStable(pl.Tmpfs, func(i, j int) bool { return depth(pl.Tmpfs[i].Target) < depth(pl.Tmpfs[j].Target) })
	pl.Landlock.ReadOnly = dedupe(pl.Landlock.ReadOnly)
	pl.Landlock.ReadWrite = dedupe(pl.Landlock.ReadWrite)
	return pl, confine.Validate(pl)
}

// planRoots binds the policy's readable host roots at the same paths
// (a symlink among them stays a symlink).
func planRoots(pl *confine.Plan, p *policy.Policy) {
	for _, r := range p.Base.HostRoots {
		// A merged-/usr host's /bin is a symlink: bound, it would be a
		// second copy of /usr/bin; as a symlink it is what the host has.
		if target, err := os.Readlink(r); err == nil {
			pl.Symlinks = append(pl.Symlinks, confine.Symlink{Path: r, Target: target})
			continue
		}
		pl.Binds = append(pl.Binds, confine.Bind{Source: r, Why: "readable system root"})
		pl.Landlock.ReadOnly = append(pl.Landlock.ReadOnly, r)
	}
}

// planMounts binds the policy's mounts at the same paths, read-only
// unless writable; staged writable paths are tmpfs (planTmpfs).
func planMounts(pl *confine.Plan, p *policy.Policy) {
	for _, m := range p.Mounts {
		if !m.ReadOnly && p.Staged() {
			continue // a staged copy on its own tmpfs
		}
		b := confine.Bind{Source: m.Path, Write: !m.ReadOnly, Why: m.Why}
		if overlay.Discarded(m) {
			// The checkout: writable through an overlay the helper makes
			// in its own user namespace, discarded with the sandbox.
			b.Discard = &confine.UpperLayer{Size: max(p.Limits.WritableSize, 1<<20), Inodes: max(p.Limits.WritableInodes, 1024)}
			pl.Binds = append(pl.Binds, b)
			pl.Landlock.ReadWrite = append(pl.Landlock.ReadWrite, m.Path)
			continue
		}
		pl.Binds = append(pl.Binds, b)
		if m.ReadOnly {
			pl.Landlock.ReadOnly = append(pl.Landlock.ReadOnly, m.Path)
		} else {
			pl.Landlock.ReadWrite = append(pl.Landlock.ReadWrite, m.Path)
		}
	}
}

// planMachinery binds this binary at launch.InitPath and, with an
// allow-list, the proxy's socket directory.
func planMachinery(pl *confine.Plan, p *policy.Policy, selfExe string) {
	if selfExe != "" {
		pl.Binds = append(pl.Binds, confine.Bind{Source: selfExe, Target: launch.InitPath, Why: "the sandbox's holder and supervisor"})
		pl.Landlock.ReadOnly = append(pl.Landlock.ReadOnly, launch.InitPath)
	}
	if src, _ := launch.EgressSource(p, false); src != "" {
		// The proxy's socket, the allow-list's only way out (the start
		// refuses a policy with a list but no socket, EgressSource).
		pl.Binds = append(pl.Binds, confine.Bind{Source: src, Target: launch.EgressDir, Why: "the network proxy's socket"})
		pl.Landlock.ReadOnly = append(pl.Landlock.ReadOnly, launch.EgressDir)
	}
}

// planTmpfs makes the scratch and each staged writable path a bounded
// tmpfs.
func planTmpfs(pl *confine.Plan, p *policy.Policy) {
	for _, s := range []struct {
		path string
		mode uint32
	}{{ScratchPaths.Home, p.Scratch.HomeMode}, {ScratchPaths.Tmp, p.Scratch.TmpMode}} {
		pl.Tmpfs = append(pl.Tmpfs, confine.Tmpfs{Target: s.path, Size: p.Scratch.Size, Inodes: p.Staging.Inodes,
			Mode: confine.Mode(s.mode), UID: p.User.UID, GID: p.User.GID, NoExec: !p.Scratch.Exec, Why: "scratch"})
		pl.Landlock.ReadWrite = append(pl.Landlock.ReadWrite, s.path)
	}
	if !p.Staged() {
		return
	}
	var staged []string
	for dir := range launch.StagedMounts(p) {
		staged = append(staged, dir)
	}
	sort.Strings(staged)
	for _, dir := range staged {
		pl.Tmpfs = append(pl.Tmpfs, confine.Tmpfs{Target: dir, Size: p.Staging.Size, Inodes: p.Staging.Inodes,
			Mode: 0o755, UID: p.User.UID, GID: p.User.GID, Why: "staged writable copy"})
		pl.Landlock.ReadWrite = append(pl.Landlock.ReadWrite, dir)
	}
}

// rlimits are the policy's per-process limits. The process count is a
// cgroup's job (RLIMIT_NPROC counts every process of the identity on the
// host); Start adds it when no cgroup can be made.
func rlimits(p *policy.Policy) []confine.Rlimit {
	var out []confine.Rlimit
	for _, r := range p.Rlimits() {
		out = append(out, confine.Rlimit{Name: r.Name, Soft: uint64(r.Value), Hard: uint64(r.Value)})
	}
	return out
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

func dedupe(ss []string) []string {
	slices.Sort(ss)
	return slices.Compact(ss)
}
