package selftest

import (
	"path/filepath"
	"slices"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// secretsChecks try to read the caller's credentials: files, another
// process's environment, and the ways around a masked path.
func secretsChecks() []Check {
	credStores := []string{".netrc", ".aws/credentials", ".docker/config.json", ".kube/config", ".pypirc",
		".gnupg/canary.key", ".config/gcloud/credentials.db", ".azure/accessTokens.json",
		".config/ai-triager/keys.toml", ".config/triage-sandbox/state.json"}
	return []Check{
		{ID: "FS-01", Name: "read SSH keys", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-01", "read_any", map[string]string{"canary": e.C.Token}, e.home(".ssh/id_selftest_canary")...))
			},
			Judge: readJudge("FS-01"), Fix: "keep ~/.ssh out of every mount (it is masked when a parent is mounted)"},
		{ID: "FS-02", Name: "read the GitHub CLI token", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-02", "read_any", map[string]string{"canary": e.C.Token}, e.home(".config/gh/hosts.yml")...))
			},
			Judge: readJudge("FS-02"), Fix: "keep ~/.config/gh unreadable ([sandbox] secrets)"},
		{ID: "FS-03", Name: "read git's stored credentials", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-03", "read_any", map[string]string{"canary": e.C.Token}, e.home(".git-credentials")...))
			},
			Judge: readJudge("FS-03"), Fix: "keep ~/.git-credentials unreadable"},
		{ID: "FS-04", Name: "read other credential stores", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-04", "read_any", map[string]string{"canary": e.C.Token}, e.home(credStores...)...))
			},
			Judge: readJudge("FS-04"), Fix: "keep every credential store in [sandbox] secrets"},
		{ID: "FS-06", Name: "read another process's environment", Category: "secrets", Requires: []policy.Capability{profiles.CapPidNamespace},
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-06", "proc_scan", map[string]string{"token": e.C.SentinelToken}))
			},
			Judge: okJudge("FS-06"), Fix: "the sandbox must have its own pid namespace"},
		{ID: "FS-09", Name: "read a secret through a symlink", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-09", "symlink_read", map[string]string{"canary": e.C.Token,
					"link": e.repros(".selftest-readlink"), "target": e.home(".ssh/id_selftest_canary")[0]}))
			},
			Judge: readJudge("FS-09"), Fix: "credential paths must not exist inside the sandbox"},
		{ID: "FS-10", Name: "hard-link a secret into the outputs", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-10", "hardlink", map[string]string{
					"src": e.home(".ssh/id_selftest_canary")[0], "dst": e.repros(".selftest-hardlink")}))
			},
			Judge: okJudge("FS-10"), Fix: "credential paths must not exist inside the sandbox"},
		inheritedFDCheck(),
		{ID: "FS-12", Name: "read the checkout's git credentials", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				return one(step("FS-12", "read_any", map[string]string{"canary": e.C.Token},
					e.checkout(".git/config"), e.checkout(gitStoreFile)))
			},
			Judge: readJudge("FS-12"),
			Fix:   "a mounted repository's git config holding a credential must be masked and given back sanitised (policy/gitview.go)"},
		{ID: "FS-13", Name: "read tool configs in a tool prefix", Category: "secrets",
			Steps: func(e *Env) []probe.Step {
				var paths []string
				for f := range toolPrefixFiles(e.C.Token) {
					paths = append(paths, filepath.Join(e.C.ToolPrefix, f))
				}
				slices.Sort(paths)
				return one(step("FS-13", "read_any", map[string]string{"canary": e.C.Token}, paths...))
			},
			Judge: readJudge("FS-13"),
			Fix:   "tool configs that may hold a token under a read-only prefix or the toolchain roots must be masked (profiles.ToolchainCredentialPaths)"},
	}
}

// inheritedFDCheck: the selftest holds a canary descriptor without
// close-on-exec while it starts the sandbox; the command must not hold or
// read it. The control, a host process started the same way, does.
func inheritedFDCheck() Check {
	return Check{ID: "FS-11", Name: "read a descriptor the caller left open", Category: "secrets",
		Steps: func(e *Env) []probe.Step {
			return one(step("FS-11", "inherited_fds", e.C.FD.args(e.C.Token)))
		},
		Judge: okJudge("FS-11"),
		Fix:   "every helper must close the descriptors above 2 it was not meant to pass before the command starts"}
}
