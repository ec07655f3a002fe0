package gate

import (
	"regexp"
	"strings"
	"sync"
)

// Code in other languages (python -c, node -e, ruby -e, perl -e, php -r,
// Rscript -e, julia -e, awk programs, and the same in a here-document or
// piped from echo) is scanned for what the rules care about where it is
// plain to see: a call that runs a literal command (os.system("…"),
// subprocess.run([…]), execSync("…"), system("…"), `…`) is judged as that
// command; a recursive delete (shutil.rmtree, FileUtils.rm_rf,
// fs.rmSync(…, {recursive: true}), rimraf…) of a literal path or of the
// home directory is judged as rm -r of it; a package installer
// (install.packages, Pkg.add, pip.main) is package-install. Code that
// computes its commands is not followed: this is a filter, not an
// interpreter.

// codeRes are compiled on first use: most commands hold no code.
var codeRes = sync.OnceValue(func() codePatterns {
	return codePatterns{
		// execCall finds calls that run a command: the name and the opening
		// parenthesis (Julia's run(`…`) included).
		execCall: regexp.MustCompile(`\b(system|system2|exec|execSync|execFileSync|execFile|spawn|spawnSync|popen|Popen|run|call|` +
			`check_call|check_output|getoutput|getstatusoutput|shell_exec|passthru|proc_open|execute|capture2|capture2e|capture3|` +
			`popen2|popen3|pipeline|spawnlp|spawnvp|execvp|execlp|execv|execl|execvpe|execlpe|qx|pty\.spawn)\s*[( ]\s*`),
		// backtickCode finds ruby/perl/php backticks and %x(), qx().
		backtickCode: regexp.MustCompile("`([^`$]*)`|%x[({]([^)}]*)[)}]|qx[({'/]([^)}'/]*)[)}'/]"),
		// treeDelete finds calls that delete a tree; recursive reports whether
		// the call always recurses or needs a recursive option.
		treeDelete: regexp.MustCompile(`\b(rmtree|rm_rf|rm_r|remove_dir|remove_entry_secure|remove_entry|remove_tree|rimraf|removeSync|` +
			`emptyDirSync|remove_all|rmSync|rmdirSync|rmdir|unlink|rm|delete_directory)\s*\(\s*`),
		// codeInstall finds package installers called from code.
		codeInstall: regexp.MustCompile(`\b(install\.packages|Pkg\.(add|instantiate|update|develop|build)|pkg"(add|up|dev)|` +
			`(devtools|remotes|BiocManager|pak)::(install\w*|pkg_install)|pip\.main|pip\._internal|ensurepip\.bootstrap|` +
			`Gem::Commands::InstallCommand|npm\.commands\.install)\b`),
		// homeExpr finds expressions for the home directory in code.
		homeExpr: regexp.MustCompile(`expanduser\(\s*['"]~['"]\s*\)|Path\.home\(\)|Dir\.home|os\.homedir\(\)|homedir\(\)|` +
			`environ(\.get\(|\[)\s*['"]HOME['"]|ENV\[\s*['"]HOME['"]\s*\]|\$ENV\{\s*['"]?HOME['"]?\s*\}|process\.env\.HOME|getenv\(\s*['"]HOME['"]|` +
			`Sys\.getenv\(\s*['"]HOME['"]|homedir\b`),
		awkPipe: regexp.MustCompile(`"([^"]*)"\s*\|\s*getline|\|\s*"([^"]*)"`),
	}
})

type codePatterns struct {
	execCall, backtickCode, treeDelete, codeInstall, homeExpr, awkPipe *regexp.Regexp
}

// alwaysRecursive are the tree deleters that need no recursive option.
var alwaysRecursive = map[string]bool{"rmtree": true, "rm_rf": true, "rm_r": true, "remove_dir": true, "remove_entry_secure": true,
	"remove_entry": true, "remove_tree": true, "rimraf": true, "removeSync": true, "emptyDirSync": true, "remove_all": true, "delete_directory": true}

// scanCode judges code in another language: the rules' code site, then
// the commands it runs, which are judged as commands.
func (j *judge) scanCode(lang, code, command string) {
	if j.stopped() || strings.TrimSpace(code) == "" {
		return
	}
	if j.applySite(Invocation{site: siteCode, scope: j.scope(), code: codeView{lang: lang, text: code, command: command}}) {
		return
	}
	for _, loc := range codeRes().execCall.FindAllStringSubmatchIndex(code, 64) {
		if j.stopped() {
			return
		}
		fn := code[loc[2]:loc[3]]
		args := literalArgs(code[loc[1]:])
		j.judgeExecArgs(lang, fn, args, command)
	}
	if lang == "ruby" || lang == "perl" || lang == "php" {
		for _, m := range codeRes().backtickCode.FindAllStringSubmatch(code, 64) {
			inner := m[1] + m[2] + m[3]
			j.nested(func() { j.script(inner) })
		}
	}
	if lang == "awk" {
		j.awkPipes(code, command)
	}
}

// judgeExecArgs judges what a call that runs a command was given: one
// string is shell code; a list (or a string and then more strings or a
// list) is an argv.
func (j *judge) judgeExecArgs(lang, fn string, args []codeArg, command string) {
	if len(args) == 0 {
		return
	}
	var argv []string
	switch {
	case args[0].list != nil:
		argv = args[0].list
	case len(args) > 1 && args[1].list != nil:
		argv = append([]string{args[0].str}, args[1].list...)
	case len(args) > 1 && fn != "system2":
		for _, a := range args {
			argv = append(argv, a.str)
		}
	case fn == "system2" && len(args) > 1:
		argv = append([]string{args[0].str}, strings.Fields(args[1].str)...)
	default:
		if fn == "run" && lang == "julia" {
			argv = strings.Fields(args[0].str)
			break
		}
		code := args[0].str
		if _, err := parse(code); err != nil {
			return // not shell (Python's exec, eval of an expression): nothing plain to judge
		}
		j.nested(func() { j.script(code) })
		return
	}
	if len(argv) > 0 {
		j.nested(func() { j.command(literals(argv), nil) })
	}
}

// installsFromCode is package-install's code site: code calling a package
// installer (install.packages, Pkg.add, pip.main). The code is not read
// further.
func installsFromCode(c Invocation) (finding, bool) {
	if c.code.lang == "" {
		return finding{}, false
	}
	if m := codeRes().codeInstall.FindString(c.code.text); m != "" {
		return finding{reason: c.code.lang + " code calls " + m + ", which installs packages", command: c.code.command, final: true}, true
	}
	return finding{}, false
}

// forksEndlessly is fork-bomb's code site: code that forks in an endless
// loop. The code is not read further.
func forksEndlessly(c Invocation) (finding, bool) {
	if c.code.lang == "" || !forkBomb(c.code.text) {
		return finding{}, false
	}
	return finding{reason: c.code.lang + " code forks in an endless loop", command: c.code.command, final: true}, true
}

// deletesTreeFromCode is recursive-delete's code site: a call that deletes
// a tree (shutil.rmtree, FileUtils.rm_rf, fs.rmSync(…, {recursive:
// true})…) of a literal path or the home directory, judged as rm -r of
// it.
func deletesTreeFromCode(c Invocation) (finding, bool) {
	code := c.code.text
	if c.code.lang == "" {
		return finding{}, false
	}
	for _, loc := range codeRes().treeDelete.FindAllStringSubmatchIndex(code, 64) {
		fn := code[loc[2]:loc[3]]
		rest := code[loc[1]:]
		call := rest[:callEnd(rest)]
		if !alwaysRecursive[fn] && !strings.Contains(strings.ToLower(call), "recursive") {
			continue
		}
		var target arg
		if args := literalArgs(rest); len(args) > 0 && args[0].list == nil {
			target = literal(args[0].str)
		} else if codeRes().homeExpr.MatchString(call) {
			target = literal("~")
		} else {
			continue // computed: not plain to see
		}
		if why := c.dangerousTarget(target); why != "" {
			return finding{reason: c.code.lang + " code calls " + fn + ", which would delete " + why, command: c.code.command}, true
		}
	}
	return finding{}, false
}

// awkPipes judges awk's pipes: "cmd" | getline runs cmd; print … | "cmd"
// feeds cmd, which runs what is printed when it is a shell.
func (j *judge) awkPipes(code, command string) {
	for _, m := range codeRes().awkPipe.FindAllStringSubmatch(code, 64) {
		cmd := m[1] + m[2]
		if m[2] != "" && isShellName(commandName(strings.Fields(cmd + " x")[0])) {
			j.dynamic("awk prints code into "+cmd, command)
			continue
		}
		j.nested(func() { j.script(cmd) })
	}
}

// codeArg is a literal argument in code: a string or a list of strings.
type codeArg struct {
	str  string
	list []string // nil unless the argument is a list
}

// literalArgs reads the literal arguments at the start of a call's
// argument list: strings ('…', "…", r'…', `…` without interpolation) and
// lists of them ([…], (…), c(…), %w(…)); it stops at the first argument
// that is not literal.
func literalArgs(s string) []codeArg {
	var out []codeArg
	for len(out) < 8 {
		s = strings.TrimLeft(s, " \t\n")
		if str, rest, ok := codeString(s); ok {
			out = append(out, codeArg{str: str})
			s = rest
		} else if list, rest, ok := codeList(s); ok {
			out = append(out, codeArg{list: list})
			s = rest
		} else {
			return out
		}
		s = strings.TrimLeft(s, " \t\n")
		if !strings.HasPrefix(s, ",") {
			return out
		}
		s = s[1:]
	}
	return out
}

// codeString reads a string literal without interpolation.
func codeString(s string) (string, string, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "r"), "b")
	if s == "" || !strings.ContainsRune(`'"`+"`", rune(s[0])) {
		return "", "", false
	}
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == q:
			return b.String(), s[i+1:], true
		case q != '\'' && (c == '$' && i+1 < len(s) && s[i+1] == '{' || c == '#' && i+1 < len(s) && s[i+1] == '{'):
			return "", "", false // interpolation
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// codeList reads a list of string literals: [...], (...), c(...), %w(...).
func codeList(s string) ([]string, string, bool) {
	for _, p := range []string{"c(", "%w(", "%w[", "qw(", "list(", "("} {
		if strings.HasPrefix(s, p) {
			s = "[" + s[len(p):]
			break
		}
	}
	if !strings.HasPrefix(s, "[") {
		return nil, "", false
	}
	s = s[1:]
	list := []string{}
	for {
		s = strings.TrimLeft(s, " \t\n,")
		if s == "" {
			return nil, "", false
		}
		if s[0] == ']' || s[0] == ')' {
			return list, s[1:], true
		}
		str, rest, ok := codeString(s)
		if !ok {
			word, rest2, ok := bareWord(s)
			if !ok {
				return nil, "", false
			}
			str, rest = word, rest2
		}
		list = append(list, str)
		s = rest
	}
}

// bareWord reads an unquoted word of a %w()/qw() list.
func bareWord(s string) (string, string, bool) {
	end := strings.IndexAny(s, " \t\n,)]")
	if end <= 0 || strings.ContainsAny(s[:end], "('\"[{$") {
		return "", "", false
	}
	return s[:end], s[end:], true
}

// callEnd is where a call's argument list ends: the closing parenthesis
// at depth zero, or the end of the line.
func callEnd(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				return i
			}
			depth--
		case '\n':
			return i
		}
	}
	return len(s)
}
