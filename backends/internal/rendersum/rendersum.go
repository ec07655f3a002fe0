// Package rendersum reads a rendering back into backends.Rendered: the
// pieces every renderer's Summary shares (the holder's and supervisor's
// specs at the end of an argv, staged paths, identities, rlimits).
package rendersum

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Hold is the holder's spec, the last argument of its argv.
func Hold(argv []string) (protocol.Hold, error) {
	if len(argv) == 0 {
		return protocol.Hold{}, errors.New("the holder's argv is empty")
	}
	return protocol.DecodeHold(argv[len(argv)-1:])
}

// Exec is the supervisor's spec, the last argument of its argv.
func Exec(argv []string) (protocol.Exec, error) {
	if len(argv) == 0 {
		return protocol.Exec{}, errors.New("the supervisor's argv is empty")
	}
	return protocol.DecodeExec(argv[len(argv)-1:])
}

// Staged are the writable paths the holder's spec stages (directories and
// files, not links or skeletons) that land on one of the rendered tmpfs:
// at the path itself or on a skeleton above it. One staged into no tmpfs
// would be written to the image's read-only root: left out.
func Staged(paths []stage.Path, tmpfs []string) []backends.RenderedMount {
	var out []backends.RenderedMount
	for _, sp := range paths {
		if sp.Kind != stage.KindDir && sp.Kind != stage.KindFile {
			continue
		}
		if Covered(sp.Path, tmpfs) {
			out = append(out, backends.RenderedMount{Path: sp.Path, Writable: true, Staged: true, Tree: sp.Kind == stage.KindDir})
		}
	}
	return out
}

// Covered: path is one of dirs or lies below one.
func Covered(path string, dirs []string) bool {
	path = filepath.Clean(path)
	for _, d := range dirs {
		d = filepath.Clean(d)
		if path == d || strings.HasPrefix(path, d+"/") || d == "/" {
			return true
		}
	}
	return false
}

// Identity is "uid:gid" (docker's User); a helper that starts as root and
// takes runAs itself runs the command as runAs.
func Identity(user string, runAs *protocol.Identity) (uid, gid int, err error) {
	if runAs != nil {
		return runAs.UID, runAs.GID, nil
	}
	u, g, ok := strings.Cut(user, ":")
	if uid, err = strconv.Atoi(u); err != nil || !ok {
		return 0, 0, fmt.Errorf("user %q is not uid:gid", user)
	}
	if gid, err = strconv.Atoi(g); err != nil {
		return 0, 0, fmt.Errorf("user %q is not uid:gid", user)
	}
	return uid, gid, nil
}

// Rlimits are the supervisor's spec's rlimits (soft and hard alike).
func Rlimits(rs []protocol.Rlimit) []backends.RenderedRlimit {
	var out []backends.RenderedRlimit
	for _, r := range rs {
		out = append(out, backends.RenderedRlimit{Name: r.Name, Soft: r.Value, Hard: r.Value})
	}
	return out
}

// Network is a loopback-only rendering's mode: the proxy's when the
// holder forwards to the proxy's socket bound in, loopback otherwise.
func Network(hold protocol.Hold, egressBound bool) policy.NetworkMode {
	if hold.Forward != nil && egressBound {
		return policy.NetworkProxy
	}
	return policy.NetworkLoopback
}
