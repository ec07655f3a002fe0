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
	text := l.text()
	opts, ops := scanOptions(rest, optionSpec{})
	first := func(vals ...string) bool { return len(ops) > 0 && ops[0].is(vals...) }
	history := func(reason string) { j.rule(ruleGitHistory, reason, text) }
	switch verb {
	case "push":
		if forcePush(opts, ops, rest) {
			j.rule(ruleGitForcePush, "git push --force rewrites or deletes history on the remote", text)
		}
		j.rule(ruleGitRemote, "git push publishes commits to a remote", text)
	case "pull":
		j.rule(ruleGitRemote, "git pull takes in and merges a remote's history", text)
	case "send-email":
		j.rule(ruleGitRemote, "git send-email mails patches out", text)
	case "svn":
		if first("dcommit", "set-tree") {
			j.rule(ruleGitRemote, "git svn "+ops[0].text+" publishes commits to a remote", text)
		}
	case "p4":
		if first("submit") {
			j.rule(ruleGitRemote, "git p4 submit publishes commits to a remote", text)
		}
	case "commit", "am", "cherry-pick", "revert", "merge":
		history("git " + verb + " adds to the branch's history")
	case "reset":
		history("git reset moves the branch and with --hard discards work")
	case "rebase", "filter-branch", "filter-repo":
		history("git " + verb + " rewrites history")
	case "checkout", "switch", "restore":
		history("git " + verb + " changes the checked-out files and can discard work")
	case "update-ref", "replace":
		history("git " + verb + " rewrites refs directly")
	case "prune":
		history("git prune deletes unreachable objects, the last copy of lost work")
	case "stash":
		if !first("list", "show") {
			history("git stash sets work aside and changes the checked-out files")
		}
	case "clean":
		if !has(opts, "-n", "--dry-run") {
			history("git clean deletes untracked files")
		}
	case "branch":
		if has(opts, "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force") {
			history("git branch " + firstOption(opts, "-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-f", "--force") + " deletes, moves or overwrites branches")
		}
	case "tag":
		if has(opts, "-d", "--delete", "-f", "--force") {
			history("git tag -d/-f deletes or moves tags")
		}
	case "reflog":
		if first("expire", "delete") {
			history("git reflog " + ops[0].text + " drops the record of lost work")
		}
	case "gc":
		if hasPrefixed(opts, "--prune") {
			history("git gc --prune deletes unreachable objects, the last copy of lost work")
		}
	case "bisect":
		if !first("log", "view", "visualize", "help", "terms") {
			history("git bisect checks out other commits")
		}
	case "symbolic-ref":
		if len(ops) >= 2 || has(opts, "-d", "--delete") {
			history("git symbolic-ref rewrites HEAD")
		}
	case "submodule":
		j.gitSubmodule(rest, l)
	case "config":
		j.gitConfigCommand(rest, l)
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
