package policy

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/gitconfig"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// toolEnv makes the ordinary tools work on a read-only checkout without
// touching the project's own config:
//   - PATH is built for the sandbox: the configured interpreter's bin
//     first, then the system directories of the readable base; never the
//     caller's entries that do not exist inside (~/.pyenv/shims).
//   - git trusts exactly the checkout and the workspace root, whatever uid
//     the sandbox runs as (never safe.directory = *), and takes no
//     optional locks, so `git status` does not try to write the index.
//   - bytecode and pytest's cache go to scratch.
func toolEnv(p *Policy, pythonEnv, hostPath string, setEnvKeys map[string]string, gitReplay []gitconfig.Entry) {
	set := func(name, value, why string) {
		if _, ok := setEnvKeys[name]; !ok {
			setEnv(p, name, value, why)
		}
	}
	var path []string
	if pythonEnv != "" {
		path = append(path, filepath.Join(pythonEnv, "bin"))
	}
	path = append(path, systemPath(p, hostPath)...)
	why := "built for the sandbox"
	if pythonEnv != "" {
		why += ": the configured python's environment first"
	}
	set("PATH", strings.Join(path, ":"), why)

	trusted := []string{p.WorkspaceRoot}
	for _, m := range p.Mounts {
		if m.Why == "project checkout" {
			trusted = append(trusted, m.Path)
		}
	}
	why = "git trusts the checkout and the workspace whatever the uid (safe.directory)"
	if len(gitReplay) > 0 {
		why += "; the project's git config, sanitised (gitview.go)"
	}
	set("GIT_CONFIG_COUNT", strconv.Itoa(len(trusted)+len(gitReplay)), why)
	for i, dir := range trusted {
		n := strconv.Itoa(i)
		set("GIT_CONFIG_KEY_"+n, "safe.directory", "git: safe.directory")
		set("GIT_CONFIG_VALUE_"+n, dir, "git: safe.directory")
	}
	for i, e := range gitReplay {
		n := strconv.Itoa(len(trusted) + i)
		v := e.Value
		if e.NoValue {
			v = "true" // `name` alone
		}
		set("GIT_CONFIG_KEY_"+n, e.Key(), "the project's git config, sanitised: its file is masked")
		set("GIT_CONFIG_VALUE_"+n, v, "the project's git config, sanitised: its file is masked")
	}
	set("GIT_OPTIONAL_LOCKS", "0", "git status does not try to write the read-only index")
	p.ScratchEnv = append(p.ScratchEnv, []ScratchVar{
		{Name: "PYTHONPYCACHEPREFIX", Under: "tmp", Rel: "pycache", Why: "bytecode goes to scratch, not the read-only checkout"},
		{Name: "PYTEST_ADDOPTS", Under: "tmp", Rel: "pytest-cache", Prefix: "-o cache_dir=", Why: "pytest's cache goes to scratch"},
	}...)
}

// systemPath is the system part of PATH: the caller's entries that are
// visible inside (under the host roots of a host-root base, or under the
// read-only mounts: the host toolchain, read_only, the python
// environment), in the caller's order; then, on an image, the image's
// usual directories. So /usr/local/go/bin is on PATH when Go is mounted,
// and ~/.pyenv/shims, which does not exist inside, never is.
func systemPath(p *Policy, hostPath string) []string {
	roots := slices.Clone(p.Base.HostRoots)
	for _, m := range p.Mounts {
		if m.ReadOnly && !m.Discard && m.Kind == "dir" && m.Path != p.WorkspaceRoot {
			roots = append(roots, m.Path)
		}
	}
	var out []string
	for _, dir := range filepath.SplitList(hostPath) {
		if !filepath.IsAbs(dir) || slices.Contains(out, dir) {
			continue
		}
		if slices.ContainsFunc(roots, func(r string) bool { return within(r, dir) }) {
			out = append(out, dir)
		}
	}
	if p.Base.Kind == BaseImage {
		for _, dir := range profiles.ImagePath() {
			if !slices.Contains(out, dir) {
				out = append(out, dir)
			}
		}
	}
	return out
}

// setEnv sets name in p.Env, replacing a passed value; set_env, applied
// later, still wins.
func setEnv(p *Policy, name, value, why string) {
	for i := range p.Env {
		if p.Env[i].Name == name {
			p.Env[i] = EnvVar{Name: name, Value: value, Why: why}
			return
		}
	}
	p.Env = append(p.Env, EnvVar{Name: name, Value: value, Why: why})
}
