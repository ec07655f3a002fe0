package selftest

import (
	"path/filepath"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
)

// writesChecks try to change host files outside the writable paths, where
// a later step (a shell, git, an editor, CI) would run what they plant.
func writesChecks() []Check {
	return []Check{
		{ID: "WR-01", Name: "write to the home directory", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-01", "write_any", map[string]string{"content": "# selftest\n"},
					e.home(".bashrc", ".profile", ".gitconfig", ".ssh/authorized_keys")...))
			},
			Judge: writeJudge("WR-01", func(e *Env) []string { return []string{e.C.Home} }),
			Fix:   "never mount the home directory writable"},
		{ID: "WR-02", Name: "plant a program on the host PATH", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-02", "write_any", map[string]string{"content": "#!/bin/sh\n", "mkdir": "true"},
					e.home(".local/bin/git", ".config/pip/pip.conf", ".local/lib/python3/site-packages/evil.pth")...))
			},
			Judge: writeJudge("WR-02", func(e *Env) []string { return []string{e.C.Home} }),
			Fix:   "never mount the home directory writable"},
		{ID: "WR-03", Name: "modify the project checkout", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-03", "write_any", map[string]string{"content": "evil\n"},
					e.checkout("README.md"), e.checkout("evil.txt")))
			},
			Judge: writeJudge("WR-03", func(e *Env) []string { return []string{e.C.Checkout} }),
			Fix:   "mount the checkout read-only"},
		{ID: "WR-03b", Name: "modify the workspace outside its outputs", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-03b", "write_any", map[string]string{"content": "evil\n"},
					filepath.Join(e.C.Root, "triage.toml"), filepath.Join(e.C.Root, "evil.txt")))
			},
			Judge: writeJudge("WR-03b", func(e *Env) []string { return []string{e.C.Root} }),
			Fix:   "mount the workspace root read-only; only the writable paths read-write"},
		{ID: "WR-04", Name: "change checkout file modes and times", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-04", "chmod", map[string]string{"path": e.checkout("README.md")}))
			},
			Judge: writeJudge("WR-04", func(e *Env) []string { return []string{e.checkout("README.md")} }),
			Fix:   "mount the checkout read-only"},
		{ID: "WR-05", Name: "truncate a checkout file", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-05", "truncate", map[string]string{"path": e.checkout("setup.py")}))
			},
			Judge: writeJudge("WR-05", func(e *Env) []string { return []string{e.checkout("setup.py")} }),
			Fix:   "mount the checkout read-only"},
		{ID: "WR-06", Name: "plant git config that runs code", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-06", "write_any", map[string]string{"content": "# selftest\n[core]\n\tfsmonitor = /tmp/evil\n"},
					e.checkout(".git/config")))
			},
			Judge: writeJudge("WR-06", func(e *Env) []string { return []string{e.checkout(".git")} }),
			Fix:   "mount the checkout (and its .git) read-only"},
		{ID: "WR-07", Name: "plant a git hook", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-07", "write_any", map[string]string{"content": "#!/bin/sh\n"}, e.checkout(".git/hooks/pre-commit")))
			},
			Judge: writeJudge("WR-07", func(e *Env) []string { return []string{e.checkout(".git/hooks")} }),
			Fix:   "mount the checkout (and its .git) read-only"},
		{ID: "WR-08", Name: "plant repo config that runs code on open", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-08", "write_any", map[string]string{"content": "x\n", "mkdir": "true"},
					e.checkout(".envrc"), e.checkout(".vscode/tasks.json"), e.checkout(".github/workflows/x.yml")))
			},
			Judge: writeJudge("WR-08", func(e *Env) []string { return []string{e.C.Checkout} }),
			Fix:   "mount the checkout read-only"},
		{ID: "WR-09", Name: "write outside through a planted symlink", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-09", "symlink_write", map[string]string{"content": "# selftest\n",
					"link": e.repros(".selftest-writelink"), "target": e.home(".bashrc")[0]}))
			},
			Judge: writeJudge("WR-09", func(e *Env) []string { return []string{e.C.Home} }),
			Fix:   "host paths outside the mounts must not exist inside"},
		{ID: "CI-01", Name: "inject into later CI steps ($GITHUB_ENV)", Category: "writes",
			Steps: func(e *Env) []probe.Step {
				return one(step("CI-01", "github_env", map[string]string{"fallback": e.C.Env["GITHUB_ENV"]}))
			},
			Judge: writeJudge("CI-01", func(e *Env) []string { return []string{e.C.Runner} }),
			Fix:   "never pass GITHUB_ENV or mount the runner's temp directory"},
	}
}

// persistenceChecks run in a second, fresh sandbox: nothing of the first
// run may be there.
func persistenceChecks() []Check {
	return []Check{
		{ID: "WR-11", Name: "persist files into the next run", Category: "writes", Phase: PhaseSecond,
			Steps: func(e *Env) []probe.Step {
				return one(step("WR-11", "exists", map[string]string{"path": filepath.Join(e.Scratch.Home, ".selftest-persist")}))
			},
			Judge: okJudge("WR-11"), Fix: "HOME and TMPDIR must be fresh for each run"},
	}
}
