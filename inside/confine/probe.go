package confine

// Support is what this machine offers the local backend, layer by layer,
// for `doctor` and the selftest to name what is missing and what it costs.
type Support struct {
	// UserNS: this process can create user namespaces (and so the rest).
	UserNS Layer `json:"user_namespaces"`
	// UnprivilegedUserNS: a non-root user can, too.
	UnprivilegedUserNS Layer `json:"unprivileged_user_namespaces"`
	Landlock           Layer `json:"landlock"`
	LandlockABI        int   `json:"landlock_abi"`
	Seccomp            Layer `json:"seccomp"`
	// Cgroup: a writable cgroup hierarchy with the memory and pids
	// controllers. CgroupVersion is "v2", "v1", "hybrid" (v1 controllers
	// with a v2 hierarchy beside them) or "" (none mounted).
	Cgroup        Layer  `json:"cgroup"`
	CgroupVersion string `json:"cgroup_version"`
}

// Layer is one mechanism's state.
type Layer struct {
	Available bool `json:"available"`
	// Detail says what was found, or why the layer is missing.
	Detail string `json:"detail"`
	// Cost says what the sandbox loses without it; set when missing.
	Cost string `json:"cost,omitempty"`
}

// What each missing layer costs (research/hostile.md §4.2).
const (
	costUserNS = "no local backend: without a user namespace the helper cannot build its own " +
		"mount, pid and network namespaces, so the filesystem view, host processes and the network stay open"
	costUnprivUserNS = "only root can use the local backend"
	costLandlock     = "the local backend refuses to run (Landlock is required); without it only the mount " +
		"namespace would keep bound but unlisted paths out of reach"
	costSeccomp = "the local backend refuses to run (its seccomp filter is required); without it io_uring, " +
		"keyrings, bpf, TIOCSTI and the mount API would be open"
	costCgroup = "no memory, pids or CPU limits beyond rlimits: fork and memory bombs are bounded per " +
		"process only"
)

func missing(detail, cost string) Layer { return Layer{Detail: detail, Cost: cost} }

func present(detail string) Layer { return Layer{Available: true, Detail: detail} }
