package gate

import (
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

func (j *judge) checkGit(l layer) {
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
	if g.verb == nil || j.stopped() {
		return
	}
	if g.verb.dynamic {
		j.rule(ruleGitRemote, "the git subcommand is only known at run time", l.text())
		j.rule(ruleGitHistory, "the git subcommand is only known at run time", l.text())
		return
	}
	j.gitVerb(g.verb.text, g.rest, l)
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

// gitVerb judges a git subcommand.
func (j *judge) gitVerb(verb string, rest []arg, l layer) {
	// These two judge code git runs, and judging code leads back here: in
	// the table they would make an initialization cycle.
	switch verb {
	case "submodule":
		j.gitSubmodule(rest, l)
		return
	case "config":
		j.gitConfigCommand(rest, l)
		return
	}
	check, ok := gitVerbChecks[verb]
	if !ok {
		return
	}
	opts, ops := scanOptions(rest, optionSpec{})
	check(j, gitArgs{verb: verb, rest: rest, opts: opts, ops: ops, text: l.text()})
}

// gitArgs is a git subcommand's command line as the checks read it.
type gitArgs struct {
	verb string
	rest []arg    // the subcommand's arguments as given
	opts []option // rest's options…
	ops  []arg    // …and operands
	text string
}

// first reports whether the first operand is one of vals.
func (g gitArgs) first(vals ...string) bool { return len(g.ops) > 0 && g.ops[0].is(vals...) }

// gitCheck judges one git subcommand.
type gitCheck func(j *judge, g gitArgs)

// gitVerbChecks are the subcommands that reach a remote or change
// history, each with its check.
var gitVerbChecks = map[string]gitCheck{
	"push":          (*judge).gitPush,
	"pull":          gitRemote("takes in and merges a remote's history"),
	"send-email":    gitRemote("mails patches out"),
	"svn":           (*judge).gitSvn,
	"p4":            (*judge).gitP4,
	"commit":        gitHistory("adds to the branch's history"),
	"am":            gitHistory("adds to the branch's history"),
	"cherry-pick":   gitHistory("adds to the branch's history"),
	"revert":        gitHistory("adds to the branch's history"),
	"merge":         gitHistory("adds to the branch's history"),
	"reset":         gitHistory("moves the branch and with --hard discards work"),
	"rebase":        gitHistory("rewrites history"),
	"filter-branch": gitHistory("rewrites history"),
	"filter-repo":   gitHistory("rewrites history"),
	"checkout":      gitHistory("changes the checked-out files and can discard work"),
	"switch":        gitHistory("changes the checked-out files and can discard work"),
	"restore":       gitHistory("changes the checked-out files and can discard work"),
	"update-ref":    gitHistory("rewrites refs directly"),
	"replace":       gitHistory("rewrites refs directly"),
	"prune":         gitHistory("deletes unreachable objects, the last copy of lost work"),
	"stash":         (*judge).gitStash,
	"clean":         (*judge).gitClean,
	"branch":        (*judge).gitBranch,
	"tag":           (*judge).gitTag,
	"reflog":        (*judge).gitReflog,
	"gc":            (*judge).gitGc,
	"bisect":        (*judge).gitBisect,
	"symbolic-ref":  (*judge).gitSymbolicRef,
}

// gitRemote is the check of a subcommand that always reaches a remote:
// "git VERB what".
func gitRemote(what string) gitCheck {
	return func(j *judge, g gitArgs) { j.rule(ruleGitRemote, "git "+g.verb+" "+what, g.text) }
}

// gitHistory is the check of a subcommand that always changes history:
// "git VERB what".
func gitHistory(what string) gitCheck {
	return func(j *judge, g gitArgs) { j.historyRule(g, "git "+g.verb+" "+what) }
}

// historyRule reports g under the git history rule.
func (j *judge) historyRule(g gitArgs, reason string) { j.rule(ruleGitHistory, reason, g.text) }

func (j *judge) gitPush(g gitArgs) {
	if forcePush(g.opts, g.ops, g.rest) {
		j.rule(ruleGitForcePush, "git push --force rewrites or deletes history on the remote", g.text)
	}
	j.rule(ruleGitRemote, "git push publishes commits to a remote", g.text)
}

func (j *judge) gitSvn(g gitArgs) {
	if g.first("dcommit", "set-tree") {
		j.rule(ruleGitRemote, "git svn "+g.ops[0].text+" publishes commits to a remote", g.text)
	}
}

func (j *judge) gitP4(g gitArgs) {
	if g.first("submit") {
		j.rule(ruleGitRemote, "git p4 submit publishes commits to a remote", g.text)
	}
}

func (j *judge) gitStash(g gitArgs) {
	if !g.first("list", "show") {
		j.historyRule(g, "git stash sets work aside and changes the checked-out files")
	}
}

func (j *judge) gitClean(g gitArgs) {
	if !has(g.opts, "-n", "--dry-run") {
		j.historyRule(g, "git clean deletes untracked files")
	}
}

func (j *judge) gitBranch(g gitArgs) {
	if has(g.opts, "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force") {
		j.historyRule(g, "git branch "+firstOption(g.opts, "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force")+" deletes, moves or overwrites branches")
	}
}

func (j *judge) gitTag(g gitArgs) {
	if has(g.opts, "-d", "--delete", "-f", "--force") {
		j.historyRule(g, "git tag -d/-f deletes or moves tags")
	}
}

func (j *judge) gitReflog(g gitArgs) {
	if g.first("expire", "delete") {
		j.historyRule(g, "git reflog "+g.ops[0].text+" drops the record of lost work")
	}
}

func (j *judge) gitGc(g gitArgs) {
	if hasPrefixed(g.opts, "--prune") {
		j.historyRule(g, "git gc --prune deletes unreachable objects, the last copy of lost work")
	}
}

func (j *judge) gitBisect(g gitArgs) {
	if !g.first("log", "view", "visualize", "help", "terms") {
		j.historyRule(g, "git bisect checks out other commits")
	}
}

func (j *judge) gitSymbolicRef(g gitArgs) {
	if len(g.ops) >= 2 || has(g.opts, "-d", "--delete") {
		j.historyRule(g, "git symbolic-ref rewrites HEAD")
	}
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
