package seatbelt

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
)

// resolve finds argv0 as the sandbox would (PATH of env, relative to dir),
// so a missing or non-executable command ends with 127 or 126 before any
// sandbox-exec runs, as in the container backends. 0 means found.
func resolve(argv0 string, env []string, dir string) (int, string) {
	abs := func(p string) string {
		if filepath.IsAbs(p) || dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	if strings.Contains(argv0, "/") {
		fi, err := os.Stat(abs(argv0))
		switch {
		case err != nil:
			return exitcode.NotFound, argv0 + ": command not found in the sandbox"
		case fi.IsDir() || fi.Mode()&0o111 == 0:
			return exitcode.NotExecutable, argv0 + ": cannot execute: permission denied"
		}
		return 0, ""
	}
	path := "/usr/bin:/bin:/usr/sbin:/sbin"
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			path = v
			break
		}
	}
	notExec := false
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		fi, err := os.Stat(abs(filepath.Join(d, argv0)))
		if err != nil || fi.IsDir() {
			continue
		}
		if fi.Mode()&0o111 != 0 {
			return 0, ""
		}
		notExec = true
	}
	if notExec {
		return exitcode.NotExecutable, argv0 + ": cannot execute: permission denied"
	}
	return exitcode.NotFound, argv0 + ": command not found in the sandbox"
}
