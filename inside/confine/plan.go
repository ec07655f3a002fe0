package confine

import "github.com/triage-sandbox/triage-sandbox/protocol/localplan"

// The plan's types are the protocol's (package protocol/localplan): the
// local backend renders the plan, the helper reads it.
type (
	Plan         = localplan.Plan
	Bind         = localplan.Bind
	UpperLayer   = localplan.UpperLayer
	Tmpfs        = localplan.Tmpfs
	Dir          = localplan.Dir
	Symlink      = localplan.Symlink
	Mask         = localplan.Mask
	LandlockPlan = localplan.LandlockPlan
	SeccompPlan  = localplan.SeccompPlan
	Rlimit       = localplan.Rlimit
	Mode         = localplan.Mode
)
