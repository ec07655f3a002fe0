package gate

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// command judges one simple command (its words already evaluated) and the
// wrappers in front of it. stmt is the statement it runs in, nil for an
// exec'd argv; its redirections are the command's.
func (j *judge) command(args []arg, stmt *syntax.Stmt) {
	if len(args) == 0 || j.stopped() || !j.tick() {
		return
	}
	if expanded, ok := j.expandAlias(args); ok {
		args = expanded
	}
	for i, a := range args {
		// A command name without a slash is looked up on PATH, not in
		// the directory a cd went to.
		j.noteWord(a, i > 0 || strings.Contains(a.text, "/"))
	}
	layers, truncated := resolveLayers(args)
	if truncated {
		j.limit(fmt.Sprintf("more than %d wrapper commands in a row", maxLayers))
		return
	}
	if input, ok := j.piped[stmt]; ok && stmt != nil {
		layers = withXargsInput(layers, input)
		layers = withXargsLine(layers, j.pipedText[stmt])
		layers = withParallelInput(layers, j.pipedText[stmt])
	}
	// Innermost first: the command that does the work gives the most
	// telling reason (sudo rm -rf / is reported as the delete).
	for i := len(layers) - 1; i >= 0 && !j.stopped(); i-- {
		l := layers[i]
		j.patterns(l.text())
		for _, alt := range canonicalTexts(l) {
			j.patterns(alt)
		}
		switch {
		case l.dynamic():
			j.dynamicCommand(l, stmt)
		case l.wrapper:
			j.wrapperSettings(l)
			j.applyRules(j.invocation(l, stmt))
		default:
			j.lookThrough(l, stmt)
			j.callFunction(l, stmt)
			if !asksForHelp(l) {
				j.applyRules(j.invocation(l, stmt))
			}
		}
	}
}

// applyRules runs the checks of the rules in force that judge this
// command's family, and those that judge every command.
func (j *judge) applyRules(c Invocation) {
	j.applyTools(c, family(c.name))
	j.applyTools(c, anyCommand)
}

// applyTools runs the command-site checks of the rules in force listed
// under one key of their tools.
func (j *judge) applyTools(c Invocation, key string) {
	for _, r := range j.gate.tools[key] {
		if j.stopped() {
			return
		}
		f, ok := r.check(c)
		switch {
		case !ok:
		case f.hint != "":
			j.rule(r.name, f.reason, c.text(), f.hint)
		default:
			j.rule(r.name, f.reason, c.text())
		}
	}
}

// asksForHelp reports a command that only prints its usage or version:
// --help or --version before any "--". Shells and interpreters are not
// exempt (sh -c CODE --help runs CODE).
func asksForHelp(l layer) bool {
	switch family(l.name) {
	case "sh", "python", "perl", "ruby", "node", "php", "lua", "rscript", "eval", "source", "awk", "julia", "r", "find", "xargs", "pwsh", "sed":
		return false
	}
	// A package runner given a package runs it whatever follows (npx
	// cowsay --version fetches and runs cowsay): only --help or --version
	// before the first operand is the tool's own.
	limit, operands := packageRunner(l.name), 0 // the operand that names the package
	for _, a := range l.args[1:] {
		switch {
		case a.is("--"):
			return false
		case a.is("--help", "--version"):
			return true
		case a.dynamic || !strings.HasPrefix(a.text, "-"):
			operands++
			if limit == 2 && operands == 1 && !a.dynamic && !a.is("exec", "x", "dlx", "run") {
				limit = 0 // npm install --help: the tool's own subcommand
			}
			if limit > 0 && operands >= limit {
				return false
			}
		}
	}
	return false
}

// packageRunner is 1 for the tools that fetch and run the package named
// by their first operand (npx, uvx…), 2 for those whose exec/x/dlx/run
// subcommand does (npm exec, pnpm dlx, pipx run…), 0 for the rest.
func packageRunner(name string) int {
	switch name {
	case "npx", "pnpx", "bunx", "uvx", "jbang":
		return 1
	case "npm", "pnpm", "yarn", "bun", "pipx":
		return 2
	}
	return 0
}

// shellVariable reports a command name that is one variable named for a
// shell: $SHELL, "${BASH}", $SH, $ZSH, $MY_SHELL (not $PYTHON, whose -c
// code is not shell).
func shellVariable(a arg) bool {
	name := strings.Trim(a.text, `"${}`)
	if !a.dynamic || name == "" || strings.ContainsAny(name, "$/ :-#%") {
		return false
	}
	return strings.HasSuffix(name, "SHELL") || strings.HasSuffix(name, "SH") || isShellName(strings.ToLower(name))
}

// dynamicCommand judges a command whose name is only known at run time.
// Its leading dynamic words may expand to nothing or to a wrapper
// ($SUDO rm -rf /), so the rest, from the first literal word, is judged as
// a command too.
func (j *judge) dynamicCommand(l layer, stmt *syntax.Stmt) {
	// $SHELL -c 'code', "$BASH" -lc …: a variable named for a shell runs
	// the code given to -c, which is judged as shell code in every role.
	if len(l.args) > 2 && shellVariable(l.args[0]) && !l.args[1].dynamic && strings.HasPrefix(l.args[1].text, "-") &&
		!strings.HasPrefix(l.args[1].text, "--") && strings.Contains(l.args[1].text, "c") {
		j.nested(func() { j.lookThrough(layer{name: "sh", args: append([]arg{literal("sh")}, l.args[1:]...)}, stmt) })
	}
	for i, a := range l.args {
		if !a.dynamic && !a.glob && !a.implicit {
			j.nested(func() { j.command(l.args[i:], stmt) })
			break
		}
	}
	j.dynamic("the command's name is only known at run time", l.text())
	j.applyTools(j.invocation(l, stmt), dynamicCommand)
}

// wrapperSettings judges the variables a wrapper sets (env GIT_PAGER=…).
func (j *judge) wrapperSettings(l layer) {
	for _, a := range l.env {
		name, value, _ := strings.Cut(a.text, "=")
		j.codeVariable(name, literal(value))
	}
}

// lookThrough judges the code a command runs that is not on its own
// command line as a command: shell code in arguments, code in other
// languages, git's aliases and helpers, the commands find, rg and at run,
// and where cd goes. The rules' checks judge the command itself.
func (j *judge) lookThrough(l layer, stmt *syntax.Stmt) {
	if strings.Contains(l.args[0].text, "/") {
		j.noteScript(l.args[0])
	}
	switch fam := family(l.name); fam {
	case "sh":
		j.checkShell(l, stmt)
	case "python", "perl", "ruby", "node", "php", "lua", "rscript", "r", "julia":
		j.checkInterpreter(fam, l, stmt)
	case "awk":
		j.checkAwk(l)
	case "pwsh":
		j.checkPwsh(l)
	case "sed":
		j.checkSed(l)
	case "eval":
		j.checkEval(l)
	case "source":
		j.checkSource(l, stmt)
	case "trap":
		j.checkTrap(l)
	case "alias":
		j.checkAlias(l)
	case "git":
		j.gitCode(l)
	case "cd", "pushd", "popd":
		j.checkCd(l)
	case "find":
		j.findCommands(l)
	case "rg":
		j.rgPreprocessor(l)
	case "at":
		j.checkAt(l, stmt)
	case "curl", "wget", "wget2", "aria2c", "http", "https", "xh", "xhs":
		j.noteDownload(l, stmt)
	}
}

// family groups the names a tool goes by: python3.12 is python, bash is
// sh, mkfs.ext4 is mkfs, git-push is git, tofu is terraform.
func family(name string) string {
	switch {
	case isShellName(name):
		return "sh"
	case isSQLClient(name):
		return "sql"
	}
	if fam, ok := familyNames[name]; ok {
		return fam
	}
	for _, v := range versionedFamilies {
		if versioned(name, v[0]) {
			return v[1]
		}
	}
	for _, p := range prefixFamilies {
		if strings.HasPrefix(name, p[0]) {
			return p[1]
		}
	}
	return name
}

// familyNames are the names whose family is another name.
var familyNames = map[string]string{
	"nodejs": "node", "gawk": "awk", "mawk": "awk", "nawk": "awk", "busybox-awk": "awk", "luajit": "lua",
	"mkdosfs": "mkfs", "mkntfs": "mkfs", "mkexfatfs": "mkfs", "mkfatfs": "mkfs", "mkreiserfs": "mkfs", "mkudffs": "mkfs",
	"mkhfs": "mkfs", "mkjfs": "mkfs", "newfs": "mkfs",
	"pvcreate": "lvm", "pvremove": "lvm", "vgcreate": "lvm", "vgextend": "lvm", "vgremove": "lvm", "lvremove": "lvm",
	"powershell": "pwsh", "powershell.exe": "pwsh", "pwsh.exe": "pwsh", ".": "source",
	"tofu": "terraform", "opentofu": "terraform", "terragrunt": "terraform",
	"reboot": "shutdown", "halt": "shutdown", "poweroff": "shutdown", "telinit": "init", "batch": "at",
}

// versionedFamilies are the families whose names may carry a version
// (python3.12, pip3, gpg2), in the order they are tried: base, family.
var versionedFamilies = [][2]string{{"python", "python"}, {"pypy", "python"}, {"pip", "pip"}, {"perl", "perl"},
	{"ruby", "ruby"}, {"php", "php"}, {"lua", "lua"}, {"gpg", "gpg"}}

// prefixFamilies are the families named by a prefix (mkfs.ext4,
// docker-credential-pass, git-push), in the order they are tried.
var prefixFamilies = [][2]string{{"mkfs", "mkfs"}, {"newfs_", "mkfs"}, {"docker-credential-", "docker-credential"}, {"git-", "git"}}

// versioned reports whether name is base, possibly followed by a version
// (python3, python3.12, pip3.11).
func versioned(name, base string) bool {
	rest, ok := strings.CutPrefix(name, base)
	return ok && strings.Trim(rest, "0123456789.") == ""
}

func isShellName(name string) bool {
	switch name {
	case "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "lksh", "oksh", "pdksh", "ash", "yash", "posh",
		"rbash", "fish", "csh", "tcsh":
		return true
	}
	return false
}

func isSQLClient(name string) bool {
	switch name {
	case "psql", "mysql", "mariadb", "sqlite3", "sqlite", "duckdb", "clickhouse-client", "clickhouse", "sqlcmd",
		"cockroach", "usql", "pgcli", "mycli", "litecli":
		return true
	}
	return false
}

// canonicalTexts are other spellings of a command to match the operator's
// patterns against: git and gh without their global options (git -C x push
// is also "git push"), python -m pip as pip.
func canonicalTexts(l layer) []string {
	if l.dynamic() || l.wrapper {
		return nil
	}
	switch family(l.name) {
	case "git":
		if g := parseGit(l); g.verb != nil {
			return []string{layer{name: "git", args: append([]arg{literal("git"), *g.verb}, g.rest...)}.text()}
		}
	case "python":
		if ic := parseInterpreter("python", l.args[1:]); ic.module != nil && !ic.module.dynamic {
			return []string{layer{name: ic.module.text, args: append([]arg{*ic.module}, ic.moduleArgs...)}.text()}
		}
	}
	return nil
}
