package localplan

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxHostname is the kernel's limit (__NEW_UTS_LEN).
const maxHostname = 64

// builtinRoots are the directories Enter builds itself; a plan may mask or
// re-bind read-only what is under them, not mount over them.
var builtinRoots = []string{"/proc", "/dev", "/sys"}

// Validate reports every problem with the plan at once, each naming the
// field, but whether its seccomp set exists (confine.Validate adds that).
func (p Plan) Validate() error {
	v := &planErrors{targets: map[string]string{}}
	p.validateBinds(v)
	p.validateTmpfs(v)
	p.validatePaths(v)
	if p.DevShmSize <= 0 {
		v.bad("dev_shm_size", "%d: /dev/shm must be bounded", p.DevShmSize)
	}
	if p.Hostname == "" || len(p.Hostname) > maxHostname || strings.ContainsAny(p.Hostname, "/\x00") {
		v.bad("hostname", "%q: want 1 to %d bytes (an empty one would keep the host's)", p.Hostname, maxHostname)
	}
	if err := checkAbsClean(p.Workdir); err != nil {
		v.bad("workdir", "%v", err)
	}
	if !ValidID(p.UID) || !ValidID(p.GID) {
		v.bad("uid/gid", "%d/%d out of range", p.UID, p.GID)
	}
	v.errs = append(v.errs, p.Landlock.validate()...)
	// Whether the set exists is confine's to say: the protocol's
	// side does not link the filter.
	if p.Seccomp.Set == "" {
		v.bad("seccomp.set", "a rule set is required")
	}
	v.errs = append(v.errs, validateRlimits(p.Rlimits)...)
	if len(v.errs) > 0 {
		return fmt.Errorf("confine: invalid plan: %w", errors.Join(v.errs...))
	}
	return nil
}

// planErrors collects Validate's problems; targets are the mount targets
// seen so far, by the field that named each.
type planErrors struct {
	errs    []error
	targets map[string]string
}

func (v *planErrors) bad(field, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

// check: p is a path inside the sandbox.
func (v *planErrors) check(field, p string) {
	if err := checkInside(p); err != nil {
		v.bad(field, "%v", err)
	}
}

// mountTarget: p is a path inside, under none of the roots Enter builds,
// and the target of no other mount.
func (v *planErrors) mountTarget(field, p string) {
	v.check(field, p)
	for _, r := range builtinRoots {
		if p == r || strings.HasPrefix(p, r+"/") {
			v.bad(field, "%q is under %s, which Enter builds itself", p, r)
		}
	}
	if other, dup := v.targets[p]; dup {
		v.bad(field, "%q is also the target of %s", p, other)
	}
	v.targets[p] = field
}

func (p Plan) validateBinds(v *planErrors) {
	for i, b := range p.Binds {
		f := fmt.Sprintf("binds[%d]", i)
		if err := checkAbsClean(b.Source); err != nil {
			v.bad(f+".source", "%v", err)
		}
		v.mountTarget(f+".target", b.Dest())
		if d := b.Discard; d != nil && (b.Write || d.Size <= 0 || d.Inodes <= 0) {
			v.bad(f+".discard", "wants a read-only bind and a positive size and inodes (write %v, size %d, inodes %d): an upper layer is always bounded", b.Write, d.Size, d.Inodes)
		}
	}
}

func (p Plan) validateTmpfs(v *planErrors) {
	for i, t := range p.Tmpfs {
		f := fmt.Sprintf("tmpfs[%d]", i)
		v.mountTarget(f+".target", t.Target)
		if t.Size <= 0 || t.Inodes <= 0 {
			v.bad(f, "size %d and inodes %d must both be positive: a tmpfs is always bounded", t.Size, t.Inodes)
		}
		if t.Mode > maxMode {
			v.bad(f+".mode", "%o has bits beyond 07777", uint32(t.Mode))
		}
		if !ValidID(t.UID) || !ValidID(t.GID) {
			v.bad(f, "uid %d or gid %d out of range", t.UID, t.GID)
		}
	}
}

// validatePaths checks the directories, symlinks, read-only paths and
// masks.
func (p Plan) validatePaths(v *planErrors) {
	for i, d := range p.Dirs {
		f := fmt.Sprintf("dirs[%d]", i)
		v.check(f+".path", d.Path)
		if d.Mode > maxMode {
			v.bad(f+".mode", "%o has bits beyond 07777", uint32(d.Mode))
		}
	}
	for i, s := range p.Symlinks {
		f := fmt.Sprintf("symlinks[%d]", i)
		v.check(f+".path", s.Path)
		if s.Target == "" || strings.ContainsRune(s.Target, 0) {
			v.bad(f+".target", "%q is empty or holds a NUL", s.Target)
		}
	}
	for i, r := range p.ReadOnly {
		v.check(fmt.Sprintf("read_only[%d]", i), r)
	}
	for i, m := range p.Masks {
		v.check(fmt.Sprintf("masks[%d].path", i), m.Path)
	}
}

func (l LandlockPlan) validate() []error {
	var errs []error
	if l.MinABI < 1 {
		errs = append(errs, fmt.Errorf("landlock.min_abi: %d: Landlock is required (at least ABI 1)", l.MinABI))
	}
	for i, p := range l.ReadOnly {
		if err := checkAbsClean(p); err != nil {
			errs = append(errs, fmt.Errorf("landlock.read_only[%d]: %w", i, err))
		}
	}
	for i, p := range l.ReadWrite {
		if err := checkAbsClean(p); err != nil {
			errs = append(errs, fmt.Errorf("landlock.read_write[%d]: %w", i, err))
		}
	}
	return errs
}

func validateRlimits(rs []Rlimit) []error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range rs {
		f := fmt.Sprintf("rlimits[%d]", i)
		if _, ok := rlimitResources[r.Name]; !ok {
			errs = append(errs, fmt.Errorf("%s.name: unknown limit %q (known: %s)", f, r.Name,
				strings.Join(RlimitNames(), ", ")))
		}
		if seen[r.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q given twice", f, r.Name))
		}
		seen[r.Name] = true
		if r.Soft > r.Hard {
			errs = append(errs, fmt.Errorf("%s: soft %d above hard %d", f, r.Soft, r.Hard))
		}
	}
	return errs
}

// checkInside accepts an absolute, clean path other than "/".
func checkInside(p string) error {
	if err := checkAbsClean(p); err != nil {
		return err
	}
	if p == "/" {
		return errors.New(`"/" is the new root itself`)
	}
	return nil
}

func checkAbsClean(p string) error {
	switch {
	case p == "" || p[0] != '/':
		return fmt.Errorf("%q is not an absolute path", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not clean (want %q)", p, path.Clean(p))
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q holds a NUL byte", p)
	}
	return nil
}

// ValidID is a user or group id the kernel accepts; 2^32-1 is its "no id".
func ValidID(id int) bool { return id >= 0 && id < 1<<32-1 }
