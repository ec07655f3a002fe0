package policy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/gitconfig"
	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// The git configuration of a mounted repository is shown sanitised. A CI
// checkout keeps its job's token in .git/config (actions/checkout's
// persisted "http.https://github.com/.extraheader = AUTHORIZATION: basic
// …"), a clone's remote URL may carry user:token@, a credential helper may
// name a store file. The host's file never changes:
//
//   - each git config of a repository at the top of a mounted directory
//     (its .git/config, config.worktree, its worktrees' and submodules'
//     configs, and the files they include that a mount exposes) is parsed
//     strictly (package gitconfig); one that cannot be parsed refuses the
//     policy, naming file and line;
//   - one that holds a credential is unreadable (masked: git inside reads
//     an empty file), and a credential store a helper names is too;
//   - for the project's repository (the checkout, else the workspace
//     root) the rest of its config is given back as git's command-line
//     configuration (GIT_CONFIG_COUNT/KEY/VALUE), URLs without their
//     userinfo, so remotes and branches still work. git reads a
//     repository's format (extensions.*) only from the file itself, so a
//     config that holds a credential and declares extensions is refused.
//     The other repositories' masked configs are not given back (git
//     there runs without its config; a warning says so).
//
// What the replay cannot do: it is command-line configuration, so git
// applies it in every repository inside, a clone in scratch included (its
// own config comes first).

// GitConfigView is one git config file the sandbox is shown sanitised.
type GitConfigView struct {
	Path string `json:"path"`
	// Removed are the entries left out or changed (key, line, why; never
	// a value).
	Removed []string `json:"removed"`
	// Replayed: the rest is given back through git's command-line
	// configuration; otherwise git runs without this file inside.
	Replayed bool `json:"replayed"`
}

// maxReplay bounds the entries given back through the environment (a
// checkout's config has a dozen).
const maxReplay = 500

// maxIncludeDepth bounds include.path chains (git's own bound is 10).
const maxIncludeDepth = 10

// gitViews decides the sanitised views of the mounted repositories' git
// configs: it adds the configs that hold a credential (and the stores
// their helpers name) to p.Unreadable, records p.GitConfigs and returns
// the project repository's entries to replay.
func gitViews(rd *hostread.Recorder, p *Policy) ([]gitconfig.Entry, error) {
	g := gitViewer{p: p, seen: map[string]bool{}, rd: rd}
	project := filepath.Join(projectDir(p), ".git", "config")
	for _, m := range p.Mounts {
		// A writable path is the sandbox's to write: what is in it is no
		// policy input (a run could make the next one refuse).
		if m.Kind != "dir" || m.System || !m.ReadOnly {
			continue
		}
		dir, ok := gitDirOf(rd, m.Path)
		if !ok || !g.exposed(dir) || g.writable(dir) {
			continue
		}
		if err := g.gitDir(dir, project, 0); err != nil {
			return nil, err
		}
	}
	slices.Sort(p.Unreadable)
	return g.replay, nil
}

type gitViewer struct {
	p      *Policy
	seen   map[string]bool
	replay []gitconfig.Entry
	rd     *hostread.Recorder
}

// gitDirOf is the git directory of a repository whose work tree is dir:
// dir/.git, or where a .git file ("gitdir: …") points.
func gitDirOf(rd *hostread.Recorder, dir string) (string, bool) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := rd.Lstat(dotgit)
	switch {
	case err != nil:
		return "", false
	case fi.IsDir():
		return dotgit, true
	case !fi.Mode().IsRegular():
		return "", false
	}
	b, err := readBounded(rd, dotgit, 4096)
	if err != nil {
		return "", false
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return "", false
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	return filepath.Clean(target), true
}

// exposed: path lies under a mount or a host root, so the sandbox could
// read it.
func (g *gitViewer) exposed(path string) bool {
	for _, m := range g.p.Mounts {
		if within(m.Path, path) {
			return true
		}
	}
	return slices.ContainsFunc(g.p.Base.HostRoots, func(r string) bool { return within(r, path) })
}

// writable: path lies in a writable mount (a sandbox of this workspace
// may have written it).
func (g *gitViewer) writable(path string) bool {
	return slices.ContainsFunc(g.p.Mounts, func(m Mount) bool { return !m.ReadOnly && within(m.Path, path) })
}

// gitDir checks the config files of one git directory, its worktrees'
// and its submodules' (which nest).
func (g *gitViewer) gitDir(dir, project string, depth int) error {
	rd := g.rd
	files := []string{filepath.Join(dir, "config"), filepath.Join(dir, "config.worktree")}
	wt, _ := rd.Glob(filepath.Join(dir, "worktrees", "*", "config.worktree"))
	files = append(files, wt...)
	for _, f := range files {
		if err := g.file(f, f == project, 0); err != nil {
			return err
		}
	}
	if depth >= 4 {
		return nil
	}
	modules, _ := rd.Glob(filepath.Join(dir, "modules", "*"))
	for _, m := range modules {
		if fi, err := rd.Lstat(m); err == nil && fi.IsDir() {
			if err := g.gitDir(m, project, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// file checks one config file: parse, sanitise, mask what holds a
// credential, and follow what it includes.
func (g *gitViewer) file(path string, replay bool, depth int) error {
	rd := g.rd
	path = filepath.Clean(path)
	if g.seen[path] || !g.exposed(path) {
		return nil
	}
	g.seen[path] = true
	if g.writable(path) {
		return nil // the sandbox's own, never read as a policy input
	}
	entries, err := readGitConfig(rd, path)
	if err != nil {
		return err
	}
	g.stores(path, entries)
	kept, removed := gitconfig.Sanitise(entries)
	if len(removed) > 0 {
		if err := g.mask(path, replay, kept, removed); err != nil {
			return err
		}
	}
	if depth >= maxIncludeDepth {
		return nil
	}
	return g.includes(path, kept, depth)
}

// readGitConfig reads and parses one git config; none where there is
// no file. One it cannot check is refused: the sandbox would see it unchecked.
func readGitConfig(rd *hostread.Recorder, path string) ([]gitconfig.Entry, error) {
	fi, err := rd.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("git config %s: %w: it would be shown to the sandbox unchecked; make it readable to triage-sandbox", path, err)
	case fi.Mode()&os.ModeSymlink != 0 || !fi.Mode().IsRegular():
		return nil, fmt.Errorf("git config %s: not a regular file (%s): it cannot be checked for credentials; replace it with the file itself", path, fi.Mode().Type())
	}
	b, err := readBounded(rd, path, gitconfig.MaxBytes+1)
	if err != nil {
		return nil, fmt.Errorf("git config %s: %w", path, err)
	}
	entries, err := gitconfig.Parse(path, b)
	if err != nil {
		return nil, fmt.Errorf("git config %w: it cannot be checked for credentials, so the sandbox may not see it; fix the file (git config --file %s --list shows what git reads)", err, path)
	}
	return entries, nil
}

// mask makes a config that held a credential unreadable, and either gives
// the rest back through the environment (replay: the project's own) or
// warns that git runs without it.
func (g *gitViewer) mask(path string, replay bool, kept []gitconfig.Entry, removed []gitconfig.Removed) error {
	view := GitConfigView{Path: path, Replayed: replay}
	for _, r := range removed {
		view.Removed = append(view.Removed, r.String())
	}
	if replay {
		if err := g.replayKept(path, kept, removed); err != nil {
			return err
		}
	} else {
		g.p.Warnings = append(g.p.Warnings, fmt.Sprintf("git config %s holds a credential (%s): it is masked whole, and git runs without it inside", path, removed[0].Key))
	}
	g.p.Unreadable = appendNew(g.p.Unreadable, path)
	g.p.GitConfigs = append(g.p.GitConfigs, view)
	return nil
}

// replayKept queues what a sanitised config kept, to be given back
// through GIT_CONFIG_*.
func (g *gitViewer) replayKept(path string, kept []gitconfig.Entry, removed []gitconfig.Removed) error {
	if ext := slices.IndexFunc(kept, func(e gitconfig.Entry) bool { return e.Section == "extensions" }); ext >= 0 {
		return fmt.Errorf("git config %s: holds a credential (%s) and declares %s, which git reads only from that file, so it cannot be shown without the credential; "+
			"remove the credential (actions/checkout: persist-credentials: false)", path, removed[0].Key, kept[ext].Key())
	}
	for _, e := range kept {
		// git refuses a relative include from the command line,
		// and what it includes is checked here on its own.
		if e.Section != "include" && e.Section != "includeif" {
			g.replay = append(g.replay, e)
		}
	}
	if len(g.replay) > maxReplay {
		return fmt.Errorf("git config %s: holds a credential (%s) and more than %d other entries, too many to give back through the environment; remove the credential (actions/checkout: persist-credentials: false)", path, removed[0].Key, maxReplay)
	}
	return nil
}

// includes follows the files a config includes (not the home's: not
// mounted, or masked with its stores).
func (g *gitViewer) includes(path string, kept []gitconfig.Entry, depth int) error {
	for _, e := range kept {
		if !(e.Section == "include" || e.Section == "includeif") || e.Name != "path" || e.NoValue {
			continue
		}
		inc := e.Value
		if strings.HasPrefix(inc, "~") {
			continue
		}
		if !filepath.IsAbs(inc) {
			inc = filepath.Join(filepath.Dir(path), inc)
		}
		if err := g.file(inc, false, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// stores makes unreadable the credential store files that a config's
// helpers name (credential.helper = store --file PATH) where a mount
// would expose them; git's default store (~/.git-credentials) is a home
// credential path already.
func (g *gitViewer) stores(path string, entries []gitconfig.Entry) {
	for _, e := range entries {
		if e.Section != "credential" || e.Name != "helper" {
			continue
		}
		fields := strings.Fields(e.Value)
		for i, f := range fields {
			file := ""
			if v, ok := strings.CutPrefix(f, "--file="); ok {
				file = v
			} else if f == "--file" && i+1 < len(fields) {
				file = fields[i+1]
			}
			if file == "" || strings.HasPrefix(file, "~") {
				continue
			}
			if !filepath.IsAbs(file) {
				// git runs the helper in the work tree; the config's
				// directory is the other place a relative name could mean.
				for _, base := range []string{filepath.Dir(filepath.Dir(path)), filepath.Dir(path)} {
					if p := filepath.Join(base, file); g.exposed(p) {
						g.p.Unreadable = appendNew(g.p.Unreadable, p)
					}
				}
				continue
			}
			if g.exposed(file) {
				g.p.Unreadable = appendNew(g.p.Unreadable, filepath.Clean(file))
			}
		}
	}
}

// readBounded reads at most limit bytes of path.
func readBounded(rd *hostread.Recorder, path string, limit int64) ([]byte, error) {
	f, err := rd.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

func appendNew(list []string, p string) []string {
	if slices.Contains(list, p) {
		return list
	}
	return append(list, p)
}
