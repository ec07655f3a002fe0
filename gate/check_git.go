package gate

import (
	"slices"
	"strings"
)

// gitCall is a git command line with its global options taken apart.
type gitCall struct {
	verb    *arg  // the subcommand (push, log…); nil when there is none
	rest    []arg // the subcommand's arguments
	configs []arg // -c key=value and --config-env key=ENV settings
}

// parseGit skips git's global options (-C dir, -c k=v, --git-dir=x, -p…)
// to find the subcommand. git-push and the like are the subcommand itself.
func parseGit(l layer) gitCall {
	var g gitCall
	args := l.args[1:]
	if sub, ok := strings.CutPrefix(l.name, "git-"); ok {
		v := literal(sub)
		g.verb, g.rest = &v, args
		return g
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dynamic || !strings.HasPrefix(a.text, "-") {
			g.verb, g.rest = &args[i], args[i+1:]
			return g
		}
		switch t := a.text; {
		case t == "-c" || t == "--config-env":
			if i+1 < len(args) {
				i++
				v := args[i]
				if t == "--config-env" {
					v = configFromEnv(v)
				}
				g.configs = append(g.configs, v)
			}
		case strings.HasPrefix(t, "--config-env="):
			g.configs = append(g.configs, configFromEnv(literal(strings.TrimPrefix(t, "--config-env="))))
		case t == "-C" || t == "--git-dir" || t == "--work-tree" || t == "--namespace" || t == "--super-prefix" || t == "--attr-source":
			i++
		case t == "--version" || t == "--help" || t == "-h":
			return g
		}
	}
	return g
}

// configFromEnv turns --config-env key=ENVVAR into a setting whose value
// is only known at run time.
func configFromEnv(a arg) arg {
	if a.dynamic {
		return a
	}
	key, _, _ := strings.Cut(a.text, "=")
	return arg{text: a.text, prefix: key + "=", dynamic: true, word: a.word}
}

// gitCode judges the code a git command line makes git run: -c aliases
// and helpers, git config writes of them, submodule foreach and difftool's
// -x command. The rules judge the subcommand itself.
func (j *judge) gitCode(l layer) {
	g := parseGit(l)
	text := l.text()
	for _, c := range g.configs {
		key, value, known := configSetting(c)
		if !known {
			j.dynamic("git -c sets a configuration key only known at run time", text)
			continue
		}
		j.gitSetting(key, value, text)
	}
	if g.verb == nil || g.verb.dynamic || j.stopped() {
		return
	}
	switch g.verb.text {
	case "submodule":
		j.gitSubmodule(g.rest, l)
	case "config":
		j.gitConfigCommand(g.rest, l)
	case "difftool", "mergetool":
		opts, _ := scanOptions(g.rest, optionSpec{values: "xtO", longValues: []string{"extcmd", "tool", "rotate-to", "skip-to"}})
		for _, c := range values(opts, "-x", "--extcmd") {
			j.code(c, "git "+g.verb.text+" -x", text)
		}
	}
}

// configSetting splits key=value; known is false when the key itself is
// only known at run time.
func configSetting(a arg) (key string, value arg, known bool) {
	if !a.dynamic {
		k, v, _ := strings.Cut(a.text, "=")
		return strings.ToLower(k), literal(v), true
	}
	k, _, ok := strings.Cut(a.prefix, "=")
	if !ok {
		return "", arg{}, false
	}
	return strings.ToLower(k), arg{text: a.text, dynamic: true, word: a.word}, true
}

// gitSetting judges a configuration value git would run: an alias is
// judged as the command it stands for, a pager or helper as shell code.
func (j *judge) gitSetting(key string, value arg, text string) {
	switch {
	case strings.HasPrefix(key, "alias."):
		if value.dynamic {
			j.dynamic("a git alias only known at run time", text)
			return
		}
		if code, ok := strings.CutPrefix(value.text, "!"); ok {
			j.code(literal(code), "git alias "+strings.TrimPrefix(key, "alias."), text)
			return
		}
		args := append([]arg{literal("git")}, literals(strings.Fields(value.text))...)
		j.nested(func() { j.command(args, nil) })
	case gitKeyRunsCode(key):
		if !value.dynamic {
			value = literal(strings.TrimPrefix(value.text, "!"))
		}
		j.code(value, "git's "+key, text)
	}
}

// gitKeyRunsCode lists configuration keys whose value git runs as a command.
func gitKeyRunsCode(key string) bool {
	switch key {
	case "core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.askpass", "sequence.editor",
		"diff.external", "gpg.program", "credential.helper", "uploadpack.packobjectshook", "interactive.difffilter", "web.browser":
		return true
	}
	section, _, _ := strings.Cut(key, ".")
	last := key[strings.LastIndexByte(key, '.')+1:]
	switch section {
	case "pager":
		return true
	case "diff":
		return last == "textconv" || last == "command"
	case "merge":
		return last == "driver"
	case "filter":
		return last == "clean" || last == "smudge" || last == "process"
	case "credential":
		return last == "helper"
	case "gpg":
		return last == "program"
	case "browser", "man", "difftool", "mergetool":
		return last == "cmd" || last == "path"
	}
	return false
}

// gitArgs is a git subcommand's command line as the checks read it.
type gitArgs struct {
	verb string
	rest []arg    // the subcommand's arguments as given
	opts []option // rest's options…
	ops  []arg    // …and operands
}

// first reports whether the first operand is one of vals.
func (g gitArgs) first(vals ...string) bool { return len(g.ops) > 0 && g.ops[0].is(vals...) }

// gitCheck judges one git subcommand for one rule.
type gitCheck func(g gitArgs) (finding, bool)

// gitDynamicVerb is the key, in a rule's verb table, of the check for a
// subcommand only known at run time.
const gitDynamicVerb = "$"

// gitVerbRule is the check of a rule that judges git subcommands, each
// with its own check in verbs.
func gitVerbRule(verbs map[string]gitCheck) ruleCheck {
	return func(c Invocation) (finding, bool) {
		if family(c.name) != "git" {
			return finding{}, false
		}
		g := parseGit(c.layer)
		if g.verb == nil {
			return finding{}, false
		}
		verb := strings.ToLower(g.verb.text) // a case-insensitive file system finds git-RESET
		if g.verb.dynamic {
			verb = gitDynamicVerb
		}
		check, ok := verbs[verb]
		if !ok {
			return finding{}, false
		}
		opts, ops := scanOptions(g.rest, gitOptionSpec(verb))
		return check(gitArgs{verb: verb, rest: g.rest, opts: opts, ops: ops})
	}
}

// gitOptionSpec says which of a subcommand's options take a value, where
// a check needs to tell them from operands.
func gitOptionSpec(verb string) optionSpec {
	switch verb {
	case "checkout":
		return optionSpec{values: "bB", longValues: []string{"orphan"}}
	case "switch":
		return optionSpec{values: "cC", longValues: []string{"create", "force-create", "orphan"}}
	}
	return optionSpec{}
}

// gitAlways is the check of a subcommand that always matches: "git VERB what".
func gitAlways(what string) gitCheck {
	return func(g gitArgs) (finding, bool) { return found("git " + g.verb + " " + what) }
}

func gitDynamic(g gitArgs) (finding, bool) {
	return found("the git subcommand is only known at run time")
}

// gitRemoteVerbs are the subcommands that publish or take in shared history.
var gitRemoteVerbs = map[string]gitCheck{
	"push":         gitAlways("publishes commits to a remote"),
	"pull":         gitAlways("takes in and merges a remote's history"),
	"send-email":   gitAlways("mails patches out"),
	"svn":          gitSvn,
	"p4":           gitP4,
	gitDynamicVerb: gitDynamic,
}

// gitForceVerbs: a push that rewrites or deletes remote history.
var gitForceVerbs = map[string]gitCheck{"push": gitPush}

// gitPlumbingVerbs update a remote's refs below git push.
var gitPlumbingVerbs = map[string]gitCheck{
	"send-pack":    gitAlways("updates a remote's refs, as push does"),
	"http-push":    gitAlways("updates a remote's refs over HTTP, as push does"),
	"receive-pack": gitAlways("updates a repository's refs from a pack"),
}

// gitHistoryVerbs rewrite history or move the checkout.
var gitHistoryVerbs = map[string]gitCheck{
	"commit":        gitAlways("adds to the branch's history"),
	"am":            gitAlways("adds to the branch's history"),
	"cherry-pick":   gitAlways("adds to the branch's history"),
	"revert":        gitAlways("adds to the branch's history"),
	"merge":         gitAlways("adds to the branch's history"),
	"reset":         gitReset,
	"rebase":        gitAlways("rewrites history"),
	"filter-branch": gitAlways("rewrites history"),
	"filter-repo":   gitAlways("rewrites history"),
	"checkout":      gitCheckout,
	"switch":        gitCheckout,
	"restore":       gitRestore,
	"update-ref":    gitAlways("rewrites refs directly"),
	"replace":       gitAlways("rewrites refs directly"),
	"prune":         gitAlways("deletes unreachable objects, the last copy of lost work"),
	"stash":         gitStash,
	"clean":         gitClean,
	"branch":        gitBranch,
	"tag":           gitTag,
	"reflog":        gitReflog,
	"gc":            gitGc,
	"bisect":        gitBisect,
	"symbolic-ref":  gitSymbolicRef,
	gitDynamicVerb:  gitDynamic,
}

// gitDiscardVerbs overwrite or delete uncommitted work.
var gitDiscardVerbs = map[string]gitCheck{
	"read-tree":      gitReadTree,
	"checkout-index": gitCheckoutIndex,
	"rm":             gitRm,
	"worktree":       gitWorktree,
}

func gitReadTree(g gitArgs) (finding, bool) {
	if has(g.opts, "-u") && has(g.opts, "--reset", "-m") {
		return found("git read-tree -u --reset overwrites the working tree, discarding uncommitted work")
	}
	return finding{}, false
}

func gitCheckoutIndex(g gitArgs) (finding, bool) {
	if has(g.opts, "-f", "--force") {
		return found("git checkout-index -f overwrites working-tree files, discarding uncommitted work")
	}
	return finding{}, false
}

func gitRm(g gitArgs) (finding, bool) {
	if has(g.opts, "-f", "--force") && !has(g.opts, "--cached") {
		return found("git rm -f deletes files even when they hold uncommitted work")
	}
	return finding{}, false
}

func gitWorktree(g gitArgs) (finding, bool) {
	if g.first("remove") && has(g.opts, "-f", "--force") {
		return found("git worktree remove --force deletes a worktree with its uncommitted work")
	}
	return finding{}, false
}

// ghCheckout is git-history's check of gh: gh pr checkout (gh co) moves
// the checkout too.
func ghCheckout(c Invocation) (finding, bool) {
	group, verb, _ := ghWords(c.args[1:])
	switch {
	case group == nil:
	case group.is("co"), group.is("pr") && verb != nil && (verb.dynamic || verb.is("checkout", "co")):
		return found("gh pr checkout changes the checked-out branch")
	}
	return finding{}, false
}

// gitCredential judges git credential fill and the credential helpers' get.
func gitCredential(l layer) (finding, bool) {
	g := parseGit(l)
	if g.verb == nil || g.verb.dynamic {
		return finding{}, false
	}
	_, ops := scanOptions(g.rest, optionSpec{})
	op := len(ops) > 0 && ops[0].is("fill", "get")
	if g.verb.is("credential") && op || strings.HasPrefix(g.verb.text, "credential-") && op {
		return found("git " + g.verb.text + " " + ops[0].text + " prints a stored credential")
	}
	return finding{}, false
}

func gitPush(g gitArgs) (finding, bool) {
	if forcePush(g.opts, g.ops, g.rest) {
		return found("git push --force rewrites or deletes history on the remote")
	}
	return finding{}, false
}

// gitReset: a reset that only unstages (git reset, git reset HEAD [--]
// paths, --mixed HEAD) leaves the branch and the files alone; any other
// moves the branch, and --hard discards work.
func gitReset(g gitArgs) (finding, bool) {
	for _, o := range g.opts {
		if o.name != "--mixed" && o.name != "-q" && o.name != "--quiet" {
			return found("git reset " + o.name + " moves the branch or discards work")
		}
	}
	if len(g.ops) > 0 && !g.ops[0].is("HEAD") && !slices.ContainsFunc(g.rest, func(a arg) bool { return a.is("--") }) ||
		mayHideOption(g.rest) {
		return found("git reset moves the branch and with --hard discards work")
	}
	return finding{}, false
}

// gitCheckout: checkout -b NAME and switch -c NAME (no start point, no
// paths) only make a branch where HEAD is; anything else changes the
// checked-out files and can discard work.
func gitCheckout(g gitArgs) (finding, bool) {
	newBranch := len(g.opts) == 1 && len(g.ops) == 0 && g.opts[0].hasValue && !g.opts[0].value.dynamic
	switch {
	case newBranch && g.verb == "checkout" && has(g.opts, "-b", "-B", "--orphan"):
	case newBranch && g.verb == "switch" && has(g.opts, "-c", "-C", "--create", "--force-create"):
	default:
		return found("git " + g.verb + " changes the checked-out files and can discard work")
	}
	return finding{}, false
}

// gitRestore: restore --staged alone only unstages; the rest overwrites
// working-tree files.
func gitRestore(g gitArgs) (finding, bool) {
	if !has(g.opts, "-S", "--staged") || has(g.opts, "-W", "--worktree") || mayHideOption(g.rest) {
		return found("git restore overwrites working-tree files and can discard work")
	}
	return finding{}, false
}

func gitSvn(g gitArgs) (finding, bool) {
	if g.first("dcommit", "set-tree") {
		return found("git svn " + g.ops[0].text + " publishes commits to a remote")
	}
	return finding{}, false
}

func gitP4(g gitArgs) (finding, bool) {
	if g.first("submit") {
		return found("git p4 submit publishes commits to a remote")
	}
	return finding{}, false
}

func gitStash(g gitArgs) (finding, bool) {
	if !g.first("list", "show") {
		return found("git stash sets work aside and changes the checked-out files")
	}
	return finding{}, false
}

func gitClean(g gitArgs) (finding, bool) {
	if !has(g.opts, "-n", "--dry-run") {
		return found("git clean deletes untracked files")
	}
	return finding{}, false
}

func gitBranch(g gitArgs) (finding, bool) {
	if has(g.opts, "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force") {
		return found("git branch " + firstOption(g.opts, "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force") + " deletes, moves or overwrites branches")
	}
	return finding{}, false
}

func gitTag(g gitArgs) (finding, bool) {
	if has(g.opts, "-d", "--delete", "-f", "--force") {
		return found("git tag -d/-f deletes or moves tags")
	}
	return finding{}, false
}

func gitReflog(g gitArgs) (finding, bool) {
	if g.first("expire", "delete") {
		return found("git reflog " + g.ops[0].text + " drops the record of lost work")
	}
	return finding{}, false
}

func gitGc(g gitArgs) (finding, bool) {
	if hasPrefixed(g.opts, "--prune") {
		return found("git gc --prune deletes unreachable objects, the last copy of lost work")
	}
	return finding{}, false
}

func gitBisect(g gitArgs) (finding, bool) {
	if !g.first("log", "view", "visualize", "help", "terms") {
		return found("git bisect checks out other commits")
	}
	return finding{}, false
}

func gitSymbolicRef(g gitArgs) (finding, bool) {
	if len(g.ops) >= 2 || has(g.opts, "-d", "--delete") {
		return found("git symbolic-ref rewrites HEAD")
	}
	return finding{}, false
}

func firstOption(opts []option, names ...string) string {
	for _, o := range opts {
		if has([]option{o}, names...) {
			return o.name
		}
	}
	return ""
}

// forcePush reports a push that can rewrite or delete remote history:
// --force and its kin, +refspec, :branch, or a refspec or option only
// known at run time.
func forcePush(opts []option, ops, rest []arg) bool {
	if has(opts, "-f", "--force", "--mirror", "--delete", "-d", "--prune", "--force-if-includes") || hasPrefixed(opts, "--force-with-lease") {
		return true
	}
	if mayHideOption(rest) {
		return true
	}
	for i, a := range ops {
		if i > 0 && (a.dynamic || strings.HasPrefix(a.text, "+") || strings.HasPrefix(a.text, ":")) {
			return true
		}
	}
	return false
}

// gitSubmodule judges git submodule foreach's shell command.
func (j *judge) gitSubmodule(rest []arg, l layer) {
	for i, a := range rest {
		if !a.is("foreach") {
			continue
		}
		cmd := rest[i+1:]
		for len(cmd) > 0 && cmd[0].is("--recursive", "-q", "--quiet") {
			cmd = cmd[1:]
		}
		if len(cmd) > 0 {
			j.code(joinCode(cmd), "git submodule foreach", l.text())
		}
		return
	}
}

// gitConfigCommand judges git config writes to aliases and command keys.
func (j *judge) gitConfigCommand(rest []arg, l layer) {
	_, ops := scanOptions(rest, optionSpec{values: "f", longValues: []string{"file", "blob", "type", "default", "comment", "value"}})
	if len(ops) > 0 && ops[0].is("set") {
		ops = ops[1:]
	} else if len(ops) > 0 && ops[0].is("get", "list", "unset", "rename-section", "remove-section", "edit") {
		return
	}
	if len(ops) < 2 {
		return
	}
	if ops[0].dynamic {
		j.dynamic("git config sets a key only known at run time", l.text())
		return
	}
	j.gitSetting(strings.ToLower(ops[0].text), ops[1], l.text())
}
