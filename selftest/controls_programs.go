package selftest

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// programControls: what a reproducer's programs need: localhost (its
// address and its name), a browser, processes and ptys, headroom, git and venv in scratch.
func programControls() []Check {
	return []Check{
		{ID: "C-05", Name: "serve and fetch on localhost", Category: "controls",
			Steps: func(e *Env) []probe.Step {
				return one(step("C-05", "http_self", map[string]string{"addr": "127.0.0.1:0"}))
			},
			Judge: okJudge("C-05"), Fix: "loopback must stay up (network none keeps lo)"},
		{ID: "C-11", Name: "serve and fetch on the name localhost", Category: "controls", ControlOnHost: true,
			// The name, not the address: it resolves through /etc/hosts with
			// no DNS, and an image's root has that file empty (vitest, and
			// every test server on http://localhost: EAI_AGAIN localhost).
			Steps: func(e *Env) []probe.Step {
				return one(step("C-11", "http_self", map[string]string{"addr": "localhost:0", "host": "localhost"}))
			},
			Judge: okJudge("C-11"), Fix: "the sandbox's /etc/hosts must name localhost (127.0.0.1 and ::1), as Docker's and the oci backend's bundle do"},
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
				return beside("git-venv",
					step("C-09/init", "exec", nil, "git", "init", "-q", repo),
					step("C-09/commit", "exec", nil, "git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@invalid",
						"commit", "-q", "--allow-empty", "-m", "selftest"),
					step("C-09/git", "exec", nil, "git", "-C", repo, "log", "--format=%s"),
					step("C-09/venv", "exec", nil, "python3", "-m", "venv", "--without-pip", filepath.Join(e.Scratch.Tmp, "selftest-venv")),
				)
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
	}
}
