package policy

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gitCanary is a token-shaped canary; checkoutGitConfig is what
// actions/checkout persists with it.
const gitCanary = "ghs_GITCANARYGITCANARYGITCANARYGITCANARY0"

func checkoutGitConfig() string {
	header := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + gitCanary))
	return "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = https://github.com/o/r\n" +
		"\tfetch = +refs/heads/*:refs/remotes/origin/*\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic " + header + "\n" +
		"[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
}

func plantGit(t *testing.T, dir, config string) string {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	path := filepath.Join(dir, ".git", "config")
	must(t, os.WriteFile(path, []byte(config), 0o644))
	return path
}

// TestCheckoutGitConfigSanitised: the checkout's .git/config with a
// persisted token is masked, and the rest is given back to git through
// its command-line configuration; no form of the token is anywhere in
// the policy.
func TestCheckoutGitConfigSanitised(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	co := filepath.Join(filepath.Dir(cfg.Root), "widgets")
	conf := plantGit(t, co, checkoutGitConfig())
	p, err := Build(cfg, "reproducer", fakeHost(t), Options{})
	must(t, err)
	if !slices.Contains(p.Masked, conf) {
		t.Errorf("the checkout's .git/config is readable inside: not masked (%v)", p.Masked)
	}
	if len(p.GitConfigs) != 1 || p.GitConfigs[0].Path != conf || !p.GitConfigs[0].Replayed {
		t.Errorf("git configs %+v", p.GitConfigs)
	}
	env := map[string]string{}
	for _, e := range p.Env {
		env[e.Name] = e.Value
	}
	var keys []string
	n, _ := strconv.Atoi(env["GIT_CONFIG_COUNT"])
	for i := range n {
		keys = append(keys, env["GIT_CONFIG_KEY_"+strconv.Itoa(i)]+"="+env["GIT_CONFIG_VALUE_"+strconv.Itoa(i)])
	}
	for _, want := range []string{"remote.origin.url=https://github.com/o/r", "branch.main.merge=refs/heads/main", "core.bare=false"} {
		if !slices.Contains(keys, want) {
			t.Errorf("git config replay lacks %s: %q (count %s)", want, keys, env["GIT_CONFIG_COUNT"])
		}
	}
	b, _ := json.Marshal(p)
	for _, form := range []string{gitCanary, base64.StdEncoding.EncodeToString([]byte("x-access-token:" + gitCanary)), "extraheader ="} {
		if strings.Contains(string(b), form) {
			t.Errorf("the policy carries %q", form)
		}
	}
}

// TestGitConfigsOfEveryMountedRepository: the workspace root's repository,
// a remote URL with userinfo, a store file a helper names, an included
// file with a header and a submodule's config are all covered.
func TestGitConfigsOfEveryMountedRepository(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	co := filepath.Join(filepath.Dir(cfg.Root), "widgets")
	plantGit(t, co, "[core]\n\tbare = false\n[include]\n\tpath = extra.inc\n[credential]\n\thelper = store --file .git/creds\n")
	inc := filepath.Join(co, ".git", "extra.inc")
	must(t, os.WriteFile(inc, []byte("[http]\n\textraHeader = Authorization: bearer x\n"), 0o644))
	sub := filepath.Join(co, ".git", "modules", "lib")
	must(t, os.MkdirAll(sub, 0o755))
	must(t, os.WriteFile(filepath.Join(sub, "config"), []byte("[remote \"origin\"]\n\turl = https://u:"+gitCanary+"@example.com/lib\n"), 0o644))
	rootConf := plantGit(t, cfg.Root, "[remote \"origin\"]\n\turl = https://tok@example.com/ws\n")
	p, err := Build(cfg, "agent", fakeHost(t), Options{})
	must(t, err)
	for _, want := range []string{filepath.Join(co, ".git", "config"), inc, filepath.Join(sub, "config"), rootConf, filepath.Join(co, ".git", "creds")} {
		if !slices.Contains(p.Masked, want) {
			t.Errorf("%s is readable inside: not masked (%v)", want, p.Masked)
		}
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, rootConf+" holds a credential") }) {
		t.Errorf("no warning for the workspace root's masked config: %q", p.Warnings)
	}
}

// TestGitConfigRefused: a config that cannot be checked, or cannot be
// shown without its credential, refuses the policy in one line.
func TestGitConfigRefused(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"unparseable", "[core]\n\tbare = \"false\n", ".git/config:2: a value whose quote is not closed on its line: it cannot be checked for credentials"},
		{"extensions", "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialclone = origin\n[http]\n\textraheader = AUTHORIZATION: basic eA==\n",
			"declares extensions.partialclone, which git reads only from that file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
			plantGit(t, filepath.Join(filepath.Dir(cfg.Root), "widgets"), tc.config)
			_, err := Build(cfg, "reproducer", fakeHost(t), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// TestCleanGitConfigUntouched: a config without credentials is shown as
// it is: nothing masked, nothing replayed.
func TestCleanGitConfigUntouched(t *testing.T) {
	cfg := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	conf := plantGit(t, filepath.Join(filepath.Dir(cfg.Root), "widgets"), "[remote \"origin\"]\n\turl = https://github.com/o/r\n")
	p, err := Build(cfg, "reproducer", fakeHost(t), Options{})
	must(t, err)
	if slices.Contains(p.Masked, conf) || len(p.GitConfigs) != 0 {
		t.Errorf("a clean config is masked: %v %+v", p.Masked, p.GitConfigs)
	}
}

// TestGitConfigInWritablePathNotAnInput: a writable path's repository is
// the sandbox's to write; its config is never read, so a run cannot make
// the next one refuse with a broken one.
func TestGitConfigInWritablePathNotAnInput(t *testing.T) {
	cfg := workspace(t, "")
	plantGit(t, filepath.Join(cfg.Root, "repros"), "[core]\n\tbare = \"broken\n")
	if _, err := Build(cfg, "reproducer", fakeHost(t), Options{}); err != nil {
		t.Errorf("a writable path's git config was read as a policy input: %v", err)
	}
}
