//go:build !linux

package confine

import (
	"context"
	"errors"
	"syscall"
)

// errNotLinux: the local backend's confinement exists only on Linux; plans
// are still rendered and validated everywhere.
var errNotLinux = errors.New("confine: namespaces, Landlock and seccomp exist only on Linux")

// Namespaces fails off Linux.
func Namespaces(uid, gid, hostUID, hostGID int) (*syscall.SysProcAttr, error) {
	return nil, errNotLinux
}

// Enter fails off Linux.
func Enter(ctx context.Context, p Plan) error { return errNotLinux }

// Restrict fails off Linux.
func Restrict(ctx context.Context, p Plan, forker int) error { return errNotLinux }

// DropForkerBounding fails off Linux.
func DropForkerBounding() (int, error) { return 0, errNotLinux }

// Probe reports every layer missing off Linux.
func Probe() Support {
	l := func(cost string) Layer { return missing("not Linux", cost) }
	return Support{UserNS: l(costUserNS), UnprivilegedUserNS: l(costUnprivUserNS), Landlock: l(costLandlock),
		Seccomp: l(costSeccomp), Cgroup: l(costCgroup)}
}
