package policy

// Input is one host path the policy was computed from: the config, the
// checkout, the python environment's files and what they name, go.mod,
// go.sum and the module cache. Listed so a reviewer sees what decides
// the policy and who could change it.
type Input struct {
	Path string `json:"path"`
	What string `json:"what"`
	// OwnerUID owns Path (-1: it does not exist).
	OwnerUID int `json:"owner_uid"`
	// SandboxWritable: Path lies in, or resolves through, a writable path
	// of some role of this workspace (Via). The policy is refused then, so
	// a built policy lists none; the field says it was checked.
	SandboxWritable bool   `json:"sandbox_writable"`
	Via             string `json:"via,omitempty"`
}
