package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
)

// workspaceControls: a reproducer runs Python, writes its file back to
// the host, reads the checkout and uses scratch space.
func workspaceControls() []Check {
	return []Check{
		{ID: "C-01", Name: "run Python", Category: "controls",
			Steps: func(e *Env) []probe.Step {
				return beside("python", step("C-01", "exec", nil, "python3", "-c", "import sys, ssl, sqlite3; print(sys.version_info[0])"))
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
	}
}
