package policy

// Rlimit is one per-process resource limit of the policy, by its Linux
// name without the RLIMIT_ prefix ("NOFILE"); soft and hard are Value.
type Rlimit struct {
	Name  string
	Value int64
}

// Rlimits are p's per-process resource limits, which every backend
// renders (backends/testkit/conformance checks each backend's rendering has them):
// open files, file size (a huge or sparse output ends in EFBIG), and core
// size (always, 0: a crash writes no memory to disk). A zero NoFile or
// FileSize is no limit. The process count is Limits.Pids, a cgroup's job;
// a backend that renders it as RLIMIT_NPROC (gVisor, local without a
// cgroup) adds that itself.
func (p *Policy) Rlimits() []Rlimit {
	var out []Rlimit
	if p.Limits.NoFile > 0 {
		out = append(out, Rlimit{"NOFILE", p.Limits.NoFile})
	}
	if p.Limits.FileSize > 0 {
		out = append(out, Rlimit{"FSIZE", p.Limits.FileSize})
	}
	return append(out, Rlimit{"CORE", p.Limits.Core})
}
