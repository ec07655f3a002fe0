package fastpath

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RunFlags are what a front reads of `run`'s flags to find the keeper a
// run would attach to: the session, or, without one, what picks a pool
// (the role, the backend and the config named on the command line). The
// rest of the policy (the config's content, the environment, the host) is
// the keeper's to compare: a route is a hint, never a decision.
type RunFlags struct {
	Session, Role, Backend, Config string
}

// runValueFlags are `run`'s flags that take a value (the CLI's cobra
// flags, cmd/triage-sandbox/run.go and common.go). Any other is read as
// taking none: an unknown one routes as its neighbours say, and the
// keeper's `run` (the CLI's own flag parsing) reports it as the CLI would.
var runValueFlags = map[string]bool{"--config": true, "--role": true, "--backend": true, "--timeout": true,
	"--workdir": true, "--session": true, "--task": true}

// ParseRun reads args (after the program name) as `run [flags] -- CMD...`
// and returns the flags that route it; false for anything else.
func ParseRun(args []string) (RunFlags, bool) {
	if len(args) < 3 || args[0] != "run" {
		return RunFlags{}, false
	}
	var r RunFlags
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 == len(args) {
				return RunFlags{}, false
			}
			return r, true
		}
		name, value, inline := strings.Cut(a, "=")
		switch {
		case !runValueFlags[name]:
			continue
		case !inline:
			if i+1 >= len(args) {
				return RunFlags{}, false
			}
			i++
			value = args[i]
		}
		switch name {
		case "--session":
			r.Session = value
		case "--role":
			r.Role = value
		case "--backend":
			r.Backend = value
		case "--config":
			r.Config = value
		}
	}
	return RunFlags{}, false
}

// routeName is the file in the keepers' directory that names the keeper
// of a run with flags r started in cwd: a session's by its name, a pool's
// by what picks it.
func routeName(cwd string, r RunFlags) string {
	id := "route\x00" + cwd + "\x00" + r.Session
	if r.Session == "" {
		id = strings.Join([]string{"pool-route", cwd, r.Role, r.Backend, r.Config}, "\x00")
	}
	sum := sha256.Sum256([]byte(id))
	return "route-" + hex.EncodeToString(sum[:8])
}

// RoutePath is the route file of a run with flags r in cwd, in dir.
func RoutePath(dir, cwd string, r RunFlags) string { return filepath.Join(dir, routeName(cwd, r)) }

// ReadRoute is the socket of the keeper a run with flags r in cwd last
// attached to, from its route file in dir ("" and an error when there is
// none): a session keeper's socket, or a pool keeper's front socket
// (FrontSocket). It is a hint, never a decision: the keeper compiles the
// run's policy and falls back unless it is its own.
func ReadRoute(dir, cwd string, r RunFlags) (string, error) {
	path := RoutePath(dir, cwd, r)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	k := strings.TrimSpace(string(b))
	if len(k) != 16 || strings.Trim(k, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%s: not a keeper's key", path)
	}
	if r.Session == "" {
		return FrontSocket(dir, k), nil
	}
	return filepath.Join(dir, k+".sock"), nil
}

// FrontSocket is where a pool's keeper of key k listens for fronts only.
// A run attached over the keeper's own socket is handed a sandbox before
// it says anything (its hello names it); a front's run takes one only
// once the keeper has compiled and compared its policy, so a fallback
// costs the pool nothing.
func FrontSocket(dir, k string) string { return filepath.Join(dir, k+".front.sock") }
