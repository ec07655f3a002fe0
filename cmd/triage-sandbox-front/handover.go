package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// cliName is the full CLI's file name beside this binary.
const cliName = "triage-sandbox-cli"

// handOver replaces this process with the full CLI beside this binary:
// the same argv (but argv[0], which names the CLI), environment and
// descriptors, so it does exactly what it does when run by hand. It
// returns only when the CLI cannot be run, saying which path and what to
// build.
func handOver(args []string) error {
	cli, err := findCLI()
	if err != nil {
		return err
	}
	if err := syscall.Exec(cli, append([]string{cli}, args...), os.Environ()); err != nil {
		return fmt.Errorf("starting %s: %v; rebuild it: CGO_ENABLED=0 go build -o %s ./cmd/triage-sandbox", cli, err, cli)
	}
	return nil // not reached
}

// findCLI is the CLI beside this binary's resolved path, trusted as this
// binary would be: a regular executable file that no one but its owner,
// who is root or this binary's owner, can change. It runs with the
// caller's rights and reads their policy, so one that others could
// replace is refused, not run.
func findCLI() (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", fmt.Errorf("finding this binary's own path (to run %s beside it): %v", cliName, err)
	}
	cli := filepath.Join(filepath.Dir(self), cliName)
	build := fmt.Sprintf("build it beside this binary: CGO_ENABLED=0 go build -o %s ./cmd/triage-sandbox (scripts/setup.sh builds both)", cli)
	fi, err := os.Stat(cli)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s is missing: every command but version runs the full CLI; %s", cli, build)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v; %s", cli, err, build)
	}
	if why := untrusted(fi, self); why != "" {
		return "", fmt.Errorf("%s %s: refusing to run it; %s", cli, why, build)
	}
	return cli, nil
}

// untrusted says why the CLI's file may not be run, or "".
func untrusted(fi os.FileInfo, self string) string {
	switch {
	case !fi.Mode().IsRegular():
		return "is not a regular file"
	case fi.Mode().Perm()&0o111 == 0:
		return "is not executable"
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("is writable by group or others (mode %v)", fi.Mode().Perm())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "has no owner to check"
	}
	sfi, err := os.Stat(self)
	if err != nil {
		return "cannot be compared with this binary: " + err.Error()
	}
	sst, ok := sfi.Sys().(*syscall.Stat_t)
	if !ok || (st.Uid != 0 && st.Uid != sst.Uid) {
		return fmt.Sprintf("belongs to uid %d, this binary to another", st.Uid)
	}
	return ""
}
