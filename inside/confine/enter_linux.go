package confine

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/phase"
)

// Enter builds the sandbox's filesystem and network view and moves the
// calling process into it. It runs in the helper Namespaces starts, with the
// capabilities it keeps in its user namespace, before Restrict; it refuses
// to run anywhere else. What it creates belongs to the plan's uid and gid,
// the only ids that namespace maps.
//
// In order:
//  1. every mount becomes private, so nothing propagates to or from the host;
//  2. a scratch tmpfs over /tmp becomes the root (pivot_root), the host's
//     root under /oldroot, and the new root's tmpfs is mounted beside it;
//  3. the plan's binds, tmpfs, directories and symlinks, shallowest first
//     (see buildOrder); mount points are created only on Enter's own
//     tmpfs mounts, never on the host;
//  4. a fresh /proc, /sys when the plan asks (read-only), a minimal /dev;
//  5. the plan's read-only paths, then its masks;
//  6. pivot_root into the new root, the old one detached, the new root's
//     tmpfs made read-only;
//  7. hostname (and NIS domain "(none)"), lo up, chdir to the workdir.
//
// Each step is a phase of ctx's trace (package phase), when it has one.
func Enter(ctx context.Context, p Plan) error {
	if err := Validate(p); err != nil {
		return err
	}
	if err := checkHelper(); err != nil {
		return fmt.Errorf("confine: enter: %w", err)
	}
	if err := enter(ctx, p); err != nil {
		return fmt.Errorf("confine: enter: %w", err)
	}
	return nil
}

func enter(ctx context.Context, p Plan) error {
	end := phase.Begin(ctx, "enter.private")
	if err := makePrivate(); err != nil {
		return err
	}
	end()
	end = phase.Begin(ctx, "enter.scratch")
	t, err := pivotToScratch(p.UID, p.GID)
	if err != nil {
		return err
	}
	defer t.close()
	end()
	end = phase.Begin(ctx, "enter.tree")
	for _, s := range buildOrder(p) {
		if err := t.apply(p, s); err != nil {
			return err
		}
	}
	end()
	end = phase.Begin(ctx, "enter.proc-sys-dev")
	if err := t.mountProc(); err != nil {
		return err
	}
	if p.Sys {
		if err := t.mountSys(); err != nil {
			return err
		}
	}
	if err := t.buildDev(p.DevShmSize); err != nil {
		return err
	}
	end()
	end = phase.Begin(ctx, "enter.read-only-masks")
	for _, r := range p.ReadOnly {
		if err := t.readOnly(r); err != nil {
			return err
		}
	}
	for _, m := range p.Masks {
		if err := t.mask(m.Path); err != nil {
			return err
		}
	}
	end()
	end = phase.Begin(ctx, "enter.pivot")
	if err := t.pivotToNewRoot(); err != nil {
		return err
	}
	end()
	defer phase.Begin(ctx, "enter.settle")()
	return settle(p)
}

// settle sets what the sandbox sees of its host and network, and its
// working directory.
func settle(p Plan) error {
	if err := unix.Sethostname([]byte(p.Hostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	// A new UTS namespace starts with the host's NIS domain name.
	if err := unix.Setdomainname([]byte("(none)")); err != nil {
		return fmt.Errorf("setdomainname: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	if err := unix.Chdir(p.Workdir); err != nil {
		return fmt.Errorf("workdir %s: %w", p.Workdir, err)
	}
	return nil
}
