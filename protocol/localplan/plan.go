// Package localplan is the local backend's confinement plan: what the
// backend (host side) renders from a policy and hands the local helper
// (sandbox side, package inside/confine) on its plan descriptor, and the
// one strict decoder for it. Its version is its spec's
// (protocol.Local): a helper of another build refuses that spec first.
package localplan

// Plan is everything the helper applies to itself: the sandbox's view of the
// filesystem, its identity and the restrictions that follow it. The local
// backend renders it from a policy (`render --backend local` prints it) and
// hands it to the helper as JSON; Enter and Restrict apply it.
//
// Paths named "inside" are paths in the sandbox's new root. Host paths
// appear only as Bind.Source.
type Plan struct {
	// Mounts, applied by Enter in the order described on Enter.
	Binds    []Bind    `json:"binds,omitempty"`
	Tmpfs    []Tmpfs   `json:"tmpfs,omitempty"`
	Dirs     []Dir     `json:"dirs,omitempty"`
	Symlinks []Symlink `json:"symlinks,omitempty"`
	// ReadOnly paths (inside) are re-bound read-only once /proc and /sys
	// exist: the kernel's writable knobs (profiles.KernelReadonlyPaths).
	// A path that does not exist is skipped.
	ReadOnly []string `json:"read_only,omitempty"`
	// Masks hide paths (inside) after every mount above: credentials under
	// a bound directory, the kernel's masked /proc and /sys entries.
	Masks []Mask `json:"masks,omitempty"`
	// Sys mounts a fresh sysfs at /sys, read-only. It belongs to the new
	// network namespace, so /sys/class/net lists lo only. Without it
	// there is no /sys.
	Sys bool `json:"sys"`
	// DevShmSize bounds the /dev/shm tmpfs, in bytes.
	DevShmSize int64 `json:"dev_shm_size"`

	Hostname string `json:"hostname"`
	Workdir  string `json:"workdir"`
	// UID and GID are the identity (inside the user namespace) the sandbox
	// runs as after Restrict.
	UID int `json:"uid"`
	GID int `json:"gid"`

	Landlock LandlockPlan `json:"landlock"`
	Seccomp  SeccompPlan  `json:"seccomp"`
	Rlimits  []Rlimit     `json:"rlimits,omitempty"`
}

// Bind makes a host file or directory visible inside. It is read-only
// unless Write is set; directories are bound with everything mounted under
// them, and a read-only bind makes those submounts read-only too. Every
// bind is nosuid and nodev.
type Bind struct {
	// Source is the host path. A writable bind refuses a Source with a
	// symlink anywhere in it, so a path swapped after the policy checked it
	// cannot redirect writes.
	Source string `json:"source"`
	// Target is the path inside; empty means the same as Source.
	Target string `json:"target,omitempty"`
	Write  bool   `json:"write"`
	// Discard makes a read-only directory bind writable with writes that
	// go nowhere: an overlay whose lower layer is Source (the kernel never
	// writes a lower layer) and whose upper layer is a fresh tmpfs bounded
	// by Discard, gone with the sandbox. Not with Write.
	Discard *UpperLayer `json:"discard,omitempty"`
	Why     string      `json:"why,omitempty"`
}

// UpperLayer bounds a discarded bind's upper layer (bytes, inodes); both are
// required.
type UpperLayer struct {
	Size   int64 `json:"size"`
	Inodes int64 `json:"inodes"`
}

// Dest is where the bind appears inside.
func (b Bind) Dest() string {
	if b.Target == "" {
		return b.Source
	}
	return b.Target
}

// Tmpfs is a fresh, bounded, writable in-memory directory: staged writable
// dirs, HOME and TMPDIR scratch.
type Tmpfs struct {
	Target string `json:"target"`
	// Size and Inodes bound it (bytes, inodes); both are required.
	Size   int64 `json:"size"`
	Inodes int64 `json:"inodes"`
	Mode   Mode  `json:"mode"`
	// UID and GID own its root (ids inside the user namespace).
	UID    int    `json:"uid"`
	GID    int    `json:"gid"`
	NoExec bool   `json:"noexec,omitempty"`
	Why    string `json:"why,omitempty"`
}

// Dir is a directory to create inside (with its missing parents). Parents of
// every mount target are created anyway; Dir is for directories that must
// exist with a given mode.
type Dir struct {
	Path string `json:"path"`
	Mode Mode   `json:"mode"`
}

// Symlink is a symbolic link to create inside, such as /lib -> usr/lib on a
// merged-/usr host.
type Symlink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// Mask hides what Path (inside) resolves to. A directory is covered by an
// empty read-only tmpfs of mode 000; anything else by an empty read-only
// regular file of mode 0444 (reads return nothing, as /dev/null would,
// without putting a device node there). The kind is decided by what exists
// when Enter runs; a path that does not exist is skipped: there is nothing
// to hide.
type Mask struct {
	Path string `json:"path"`
	Why  string `json:"why,omitempty"`
}

// LandlockPlan is the Landlock ruleset Restrict applies. Paths are inside
// the new root and must exist. Restrict adds the entries for what Enter
// itself builds (see BuiltinLandlock). Network rights are not handled: the
// network namespace confines the network, and Landlock's TCP rules cannot
// tell loopback from the rest.
type LandlockPlan struct {
	// MinABI is the lowest Landlock ABI the sandbox accepts; Restrict
	// refuses to run on a kernel below it. Must be at least 1.
	MinABI    int      `json:"min_abi"`
	ReadOnly  []string `json:"read_only,omitempty"`
	ReadWrite []string `json:"read_write,omitempty"`
}

// SeccompPlan names the seccomp filter Restrict loads.
type SeccompPlan struct {
	// Set names a rule set; see seccompfilter.Sets.
	Set string `json:"set"`
}

// Rlimit is one resource limit, by its name without the RLIMIT_ prefix
// ("NOFILE"); see RlimitNames.
type Rlimit struct {
	Name string `json:"name"`
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
}
