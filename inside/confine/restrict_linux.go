package confine

import (
	"context"
	"fmt"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/triage-sandbox/triage-sandbox/inside/seccompfilter"
	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"golang.org/x/sys/unix"
)

// Restrict confines the calling process, every thread of it, for good. It
// runs in the helper after Enter and after anything else that still needs
// privileges; what the process and its children do afterwards cannot undo
// any of it. It refuses to run anywhere but in the helper.
//
// In order:
//  1. checks that can fail without side effects: the plan, the Landlock
//     ABI against MinABI, the seccomp filter for this architecture;
//  2. resource limits (while raising them is still allowed);
//  3. securebits locked, ambient set emptied (the bounding set is forker's,
//     the thread every child starts from, emptied before by
//     DropForkerBounding), supplementary
//     groups dropped (where the namespace allows it), uid and gid set,
//     every capability set emptied; parent-death signal set again; the
//     process made non-dumpable, so its commands cannot open its /proc;
//  4. no_new_privs;
//  5. Landlock;
//  6. the seccomp filter (TSYNC);
//  7. every thread's /proc status read back and checked.
//
// Each step is a phase of ctx's trace (package phase), when it has one.
func Restrict(ctx context.Context, p Plan, forker int) error {
	if err := Validate(p); err != nil {
		return err
	}
	if err := checkHelper(); err != nil {
		return fmt.Errorf("confine: restrict: %w", err)
	}
	if err := restrict(ctx, p, forker); err != nil {
		return fmt.Errorf("confine: restrict: %w", err)
	}
	return nil
}

func restrict(ctx context.Context, p Plan, forker int) error {
	end := phase.Begin(ctx, "restrict.compile")
	abi, err := landlockABI(p.Landlock.MinABI)
	if err != nil {
		return err
	}
	filter, err := seccompfilter.Compile(p.Seccomp.Set)
	if err != nil {
		return err
	}
	end()
	end = phase.Begin(ctx, "restrict.privileges")
	if err := setRlimits(p.Rlimits); err != nil {
		return err
	}
	if forker <= 0 {
		return fmt.Errorf("no thread to start children from (forker %d): see DropForkerBounding", forker)
	}
	if err := dropPrivileges(p.UID, p.GID); err != nil {
		return err
	}
	if err := llsyscall.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	end()
	end = phase.Begin(ctx, "restrict.landlock")
	if err := applyLandlock(p, abi); err != nil {
		return err
	}
	end()
	end = phase.Begin(ctx, "restrict.seccomp")
	if err := seccompfilter.Load(filter); err != nil {
		return err
	}
	end()
	defer phase.Begin(ctx, "restrict.verify")()
	return verifyThreads(p.UID, p.GID, forker)
}
