package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/probe"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// reproFile is the file the "write a reproducer" control writes and the host
// reads back.
const reproFile = "selftest-repro.py"

// controlChecks are the C-xx checks: things a reproducer must be able to do.
// A sandbox that blocks everything fails them.
func controlChecks() []Check {
	checks := []Check{
		{ID: "C-01", Name: "run Python", Category: "controls",
			Steps: func(e *Env) []probe.Step {
				return one(step("C-01", "exec", nil, "python3", "-c", "import sys, ssl, sqlite3; print(sys.version_info[0])"))
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				o := ev.Obs["C-01"]
				return o.OK && strings.TrimSpace(o.Detail) == "3", errnoEvidence(o)
			},
			Fix: "the image needs python3 (or set [project] python)"},
		{ID: "C-02", Name: "write a reproducer", Category: "controls",
			Steps: func(e *Env) []probe.Step {
				return one(step("C-02", "write_any", map[string]string{"content": "print('" + e.C.Token + "')\n"}, e.repros(reproFile)))
			},
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				p := e.repros(reproFile)
				fi, err := os.Lstat(p)
				if err != nil {
					return false, "not on the host: " + errnoEvidence(ev.Obs["C-02"])
				}
				b, _ := os.ReadFile(p)
				if !fi.Mode().IsRegular() || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || !strings.Contains(string(b), e.C.Token) {
					return false, fmt.Sprintf("host copy wrong: mode %v", fi.Mode())
				}
				owner := e.P.User.UID
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != owner {
					return false, fmt.Sprintf("owned by uid %d, want %d", st.Uid, owner)
				}
				return true, fmt.Sprintf("host reads it back, owner uid %d", owner)
			},
			Fix: "the writable paths must be mounted read-write and writable by the sandbox uid"},
		{ID: "C-03", Name: "read the checkout and run read-only git", Category: "controls",
			Steps: func(e *Env) []probe.Step {
				return []probe.Step{
					step("C-03/read", "read_any", map[string]string{"canary": e.C.Token}, e.checkout("README.md")),
					step("C-03/git", "exec", nil, "git", "-c", "safe.directory=*", "-C", e.C.Checkout, "log", "-1", "--format=%s"),
				}
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				r, g := ev.Obs["C-03/read"], ev.Obs["C-03/git"]
				if r.Values["found"] != "true" {
					return false, "read: " + errnoEvidence(r)
				}
				if !g.OK {
					return false, "git: " + errnoEvidence(g)
				}
				return true, "git log: " + g.Detail
			},
			Fix: "mount the checkout read-only (not absent); the image needs git"},
		{ID: "C-04", Name: "use scratch space (" + strings.Join(append([]string{"TMPDIR", "HOME"}, shmDirs()...), ", ") + ")",
			Category: "controls",
			Steps: func(e *Env) []probe.Step {
				return []probe.Step{
					step("C-04", "scratch_io", nil, append([]string{e.Scratch.Tmp, e.Scratch.Home}, shmDirs()...)...),
					// Planted for WR-11: the next run must not see it.
					step("C-04/persist", "write_any", map[string]string{"content": "x"}, filepath.Join(e.Scratch.Home, ".selftest-persist")),
				}
			},
			Judge: okJudge("C-04"), Fix: "HOME and TMPDIR need writable tmpfs scratch"},
		{ID: "C-05", Name: "serve and fetch on localhost", Category: "controls",
			Steps: func(e *Env) []probe.Step {
				return one(step("C-05", "http_self", map[string]string{"addr": "127.0.0.1:0"}))
			},
			Judge: okJudge("C-05"), Fix: "loopback must stay up (network none keeps lo)"},
		{ID: "C-06", Name: "serve on localhost and load it in headless Chromium", Category: "controls",
			Roles: []profiles.Role{profiles.RoleReproducer}, Phase: PhaseBrowser,
			Steps: func(e *Env) []probe.Step { return one(step("C-06", "browser", nil)) },
			Judge: okJudge("C-06"),
			Inconclusive: func(_ *Env, ev *Evidence) (bool, string) {
				if ev.Obs["C-06"].Values["missing"] == "true" {
					return true, noBrowserHint()
				}
				return false, ""
			},
			Fix: "Chromium needs /dev/shm (or --disable-dev-shm-usage), enough pids and memory; never add SYS_ADMIN"},
		{ID: "C-07", Name: "fork, threads, pty and socketpair", Category: "controls",
			Steps: func(e *Env) []probe.Step { return one(step("C-07", "proc_features", nil)) },
			Judge: okJudge("C-07"), Fix: "the seccomp profile or /dev is too tight"},
		{ID: "C-08", Name: "enough headroom (memory, processes, scratch, CPU)", Category: "controls",
			Steps: func(e *Env) []probe.Step {
				return one(step("C-08", "headroom", map[string]string{
					"memory":        strconv.FormatInt(e.P.Limits.Memory/4, 10),
					"procs":         strconv.FormatInt(min(200, e.P.Limits.Pids/2), 10),
					"scratch":       e.Scratch.Tmp,
					"scratch_bytes": strconv.FormatInt(min(64<<20, e.P.Scratch.Size/4), 10),
				}))
			},
			Judge: okJudge("C-08"), Fix: "raise [sandbox] memory, pids or tmpfs_size"},
		{ID: "C-09", Name: "use git and venv offline in scratch", Category: "controls",
			Steps: func(e *Env) []probe.Step {
				repo := filepath.Join(e.Scratch.Tmp, "selftest-git")
				return []probe.Step{
					step("C-09/init", "exec", nil, "git", "init", "-q", repo),
					step("C-09/commit", "exec", nil, "git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@invalid",
						"commit", "-q", "--allow-empty", "-m", "selftest"),
					step("C-09/git", "exec", nil, "git", "-C", repo, "log", "--format=%s"),
					step("C-09/venv", "exec", nil, "python3", "-m", "venv", "--without-pip", filepath.Join(e.Scratch.Tmp, "selftest-venv")),
				}
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				g, v := ev.Obs["C-09/git"], ev.Obs["C-09/venv"]
				if !g.OK || strings.TrimSpace(g.Detail) != "selftest" {
					return false, "git: " + errnoEvidence(ev.Obs["C-09/init"]) + " " + errnoEvidence(ev.Obs["C-09/commit"]) + " " + errnoEvidence(g)
				}
				if !v.OK {
					return false, "venv: " + errnoEvidence(v)
				}
				return true, "git commit and python venv in scratch"
			},
			Fix: "scratch must allow exec; the image needs git and python3"},
		{ID: "C-10", Name: "exit status and stderr come back", Category: "controls",
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				if ev.Result.ExitCode != statusExitCode {
					return false, fmt.Sprintf("exit %d, want %d", ev.Result.ExitCode, statusExitCode)
				}
				if !strings.Contains(ev.Stderr, statusMarker) {
					return false, "stderr marker missing"
				}
				return true, fmt.Sprintf("exit %d and stderr marker returned", statusExitCode)
			},
			Fix: "the backend must pass exit codes and stderr through"},
		{ID: "C-10b", Name: "a timeout is reported as a timeout", Category: "controls", Phase: PhaseTimeout,
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				return ev.Result.TimedOut, fmt.Sprintf("timed out: %v, exit %d", ev.Result.TimedOut, ev.Result.ExitCode)
			},
			Fix: "the backend must report timeouts"},
	}
	for i := range checks {
		checks[i].Expect = Allowed
	}
	return checks
}

// shmDirs is POSIX shared memory's directory, which Chromium needs: Linux's
// /dev/shm. macOS keeps shared memory out of the file system.
func shmDirs() []string {
	if hostOS == "darwin" {
		return nil
	}
	return []string{"/dev/shm"}
}

// noBrowserHint says where C-06 looks for Chromium and how to provide it.
func noBrowserHint() string {
	if hostOS == "darwin" {
		return "no Chromium readable in the sandbox: install one (npx playwright install chromium) and pass " +
			"PLAYWRIGHT_BROWSERS_PATH, or add the browser's .app to [sandbox] read_only"
	}
	return "no Chromium in the image: build it with `triage-sandbox image build` (Chromium is in by default)"
}

// The main run ends with this code and stderr line (C-10).
const (
	statusExitCode = 3
	statusMarker   = "triage-selftest-stderr-marker"
)
