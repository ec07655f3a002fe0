package selftest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// plantDir is where the outputs checks plant; cleanWritable removes it.
const plantDir = ".selftest-plant"

func (e *Env) plant(name string) string { return filepath.Join(e.repros(plantDir), name) }

// outputsChecks judge what a host reader finds in the outputs after a run:
// the hostile files are planted inside, then the host side is inspected.
// The control plants the same on the host, where nothing intervenes.
func outputsChecks() []Check {
	plantStep := func(e *Env) []probe.Step {
		return one(step("OUT-02", "plant_outputs", map[string]string{"dir": e.repros(plantDir), "secret": e.home(".ssh/id_rsa")[0]}))
	}
	planted := func(e *Env, ev *Evidence) (bool, string) {
		o := ev.Obs["OUT-02"]
		return o.OK, o.Detail
	}
	return []Check{
		{ID: "OUT-02", Name: "leave a set-uid program in the outputs", Category: "outputs", Steps: plantStep,
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				if ok, detail := planted(e, ev); !ok {
					return false, detail
				}
				fi, err := os.Lstat(e.plant("suid"))
				if err != nil {
					return false, "no set-uid file on the host"
				}
				if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					return true, fmt.Sprintf("the host has %s with mode %v", e.plant("suid"), fi.Mode())
				}
				return false, "set-id bits removed after the run"
			},
			Fix: "outputs must be inspected after every run (sandbox.Session)"},
		{ID: "OUT-03", Name: "plant a git repository with hooks in the outputs", Category: "outputs",
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				if _, err := os.Lstat(e.plant(".git")); err == nil {
					return true, "a .git with hooks is where git looks for it: " + e.plant(".git")
				}
				return false, "moved out of the tools' way"
			},
			Fix: "outputs must be inspected after every run; allow tool configs only where needed ([sandbox] allow_tool_config)"},
		{ID: "OUT-04", Name: "leave an unreported symlink to a secret", Category: "outputs",
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				link := e.plant("link")
				fi, err := os.Lstat(link)
				if err != nil || fi.Mode()&os.ModeSymlink == 0 {
					return false, "no symlink on the host"
				}
				for _, l := range ev.Outputs.Leftovers {
					if l.Path == link && l.Kind == "symlink" {
						return false, "listed in the run's special files: " + l.Detail
					}
				}
				return true, "a symlink to a secret waits in the outputs, unreported"
			},
			Fix: "outputs must be inspected after every run and special files reported"},
		{ID: "OUT-05", Name: "plant a config that later runs would use", Category: "outputs",
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				cfgPath := e.plant("triage.toml")
				if _, err := os.Lstat(cfgPath); err != nil {
					return false, "no planted config"
				}
				dir := filepath.Dir(cfgPath)
				if ev.Host {
					// Without the check, discovery from a reproducer's
					// directory takes the nearest file.
					found, err := config.Find(dir)
					return err == nil && found == cfgPath, "nearest triage.toml from " + dir + ": " + found
				}
				cfg, err := sandbox.LoadConfig("", dir, nil)
				if err == nil && cfg.Path == cfgPath {
					return true, "a run started in " + dir + " would use the planted config"
				}
				return false, fmt.Sprintf("refused: %v", err)
			},
			Fix: "config discovery must refuse a triage.toml inside a writable path"},
	}
}
