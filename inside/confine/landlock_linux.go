package confine

import (
	"errors"
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// landlockConfigs are go-landlock's presets, index i for ABI i+1.
var landlockConfigs = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// landlockABI returns the kernel's Landlock ABI, refusing one below min.
func landlockABI(min int) (int, error) {
	abi, err := llsyscall.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("landlock: the kernel offers none (%w; ENOSYS: not built in, "+
			"EOPNOTSUPP: not enabled at boot, see lsm= and /sys/kernel/security/lsm)", err)
	}
	if abi < min {
		return 0, fmt.Errorf("landlock: the kernel has ABI %d, the plan requires at least %d", abi, min)
	}
	return abi, nil
}

// applyLandlock restricts every thread to the plan's rules with everything
// the kernel's ABI can restrict (never a best-effort downgrade below it):
// filesystem rights and, from ABI 6, signals and abstract unix sockets to
// outside the sandbox. TCP and UDP rights are not handled: the network
// namespace confines them, and handling them would cut loopback too.
func applyLandlock(p Plan, abi int) error {
	cfg := landlockConfigs[min(abi, len(landlockConfigs))-1]
	cfg.HandledAccessNet = 0
	var rules []landlock.Rule
	for _, r := range LandlockRules(p) {
		st, err := os.Stat(r.Path)
		if errors.Is(err, os.ErrNotExist) && r.Optional {
			continue
		}
		if err != nil {
			return fmt.Errorf("landlock: %s: %w", r.Path, err)
		}
		rules = append(rules, landlockRule(r, st.IsDir(), abi))
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: restricting with ABI %d: %w", abi, err)
	}
	return nil
}

func landlockRule(r LandlockRule, dir bool, abi int) landlock.Rule {
	var rule landlock.FSRule
	switch {
	case r.Access == "ro" && dir:
		rule = landlock.RODirs(r.Path)
	case r.Access == "ro":
		rule = landlock.ROFiles(r.Path)
	case dir:
		rule = landlock.RWDirs(r.Path)
	default:
		rule = landlock.RWFiles(r.Path)
	}
	if r.Access == "rw" && dir && abi >= 2 {
		rule = rule.WithRefer()
	}
	if r.Access == "dev" && abi >= 5 {
		rule = rule.WithIoctlDev()
	}
	return rule
}
