package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// Host is what Build needs to know about the machine and the caller. Tests
// and the selftest pass a fake one (a canary home, a canary environment).
type Host struct {
	Home string   // the caller's home directory
	Env  []string // the caller's environment, NAME=VALUE
	OS   string   // runtime.GOOS
	UID  int
	GID  int
	Cwd  string
	// Reads, when set, notes every path the compile looks at and what it
	// was then (package hostread): a keeper reuses the compiled policy
	// while none of them changed. Nil reads without noting.
	Reads *hostread.Recorder `json:"-"`
}

// CurrentHost reads the facts of this process.
func CurrentHost() (Host, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Host{}, fmt.Errorf("finding the home directory: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return Host{}, fmt.Errorf("finding the current directory: %w", err)
	}
	return Host{Home: home, Env: os.Environ(), OS: runtime.GOOS, UID: os.Getuid(), GID: os.Getgid(), Cwd: cwd}, nil
}

// Getenv looks a name up in the host environment.
func (h Host) Getenv(name string) (string, bool) {
	for _, kv := range h.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// expandHome turns a leading "~" into the host home.
func (h Host) expandHome(p string) string {
	if p == "~" {
		return h.Home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(h.Home, p[2:])
	}
	return p
}
