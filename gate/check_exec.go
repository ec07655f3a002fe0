package gate

import (
	"encoding/base64"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// code judges shell code an argument holds (sh -c, eval, trap, alias…):
// literal code is parsed and judged; code only known at run time is
// download-exec when it comes from a downloader, else dynamic.
func (j *judge) code(a arg, runner, command string) {
	if !a.dynamic {
		j.nested(func() { j.script(a.text) })
		return
	}
	if j.downloads(a.word) {
		j.runsDownload(runner, "code it has just downloaded", command)
		return
	}
	// X='echo hi'; eval "$X": a variable the line set only to literal
	// text before this point runs that text.
	if values, ok := loopValues(a, j.literalVars(a)); ok {
		for _, v := range values {
			j.nested(func() { j.script(v.text) })
		}
		return
	}
	j.dynamic(runner+" runs code only known at run time", command)
}

// literalVars are the variables of the code being judged that it sets
// only to literal text (see noteAssigned), each with its values, limited
// to those set before a (at a lower offset of the same code).
func (j *judge) literalVars(a arg) map[string][]string {
	if a.word == nil || len(j.literals) == 0 {
		return nil
	}
	at := a.word.Pos().Offset()
	out := map[string][]string{}
	for name, lv := range j.literals {
		if lv.values != nil && lv.first < at {
			out[name] = lv.values
		}
	}
	return out
}

// shellCall is how a shell was asked to get its commands.
type shellCall struct {
	code   *arg // -c's command string
	script *arg // the script file
	stdin  bool // reads commands from standard input
}

// parseShell reads a shell's options: -c may be combined with others (-lc,
// -ec, -euxc) and need not come last; -o/-O and --rcfile take a value.
func parseShell(args []arg) shellCall {
	i, hasC, hasS := shellOptions(args)
	operands := args[min(i, len(args)):]
	var sc shellCall
	switch {
	case hasC:
		if len(operands) > 0 {
			sc.code = &operands[0]
		}
	case hasS || len(operands) == 0 || isStdinPath(operands[0]):
		sc.stdin = true
	default:
		sc.script = &operands[0]
	}
	return sc
}

// shellOptions reads a shell's options: where its operands start, and
// whether -c and -s are among them.
func shellOptions(args []arg) (end int, hasC, hasS bool) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		t := a.text
		if a.dynamic || a.implicit {
			break
		}
		if t == "--" || t == "-" {
			i++
			break
		}
		if len(t) < 2 || t[0] != '-' && t[0] != '+' {
			break
		}
		if strings.HasPrefix(t, "--") {
			if t == "--rcfile" || t == "--init-file" {
				i++
			}
			continue
		}
		c, s, values := shellFlags(t)
		hasC, hasS = hasC || c, hasS || s
		i += values
	}
	return i, hasC, hasS
}

// shellFlags reads one word of single-letter options (-euxc, +o): -c,
// -s, and how many values (-o, -O) follow it.
func shellFlags(t string) (c, s bool, values int) {
	for _, r := range t[1:] {
		switch {
		case r == 'c' && t[0] == '-':
			c = true
		case r == 's' && t[0] == '-':
			s = true
		case r == 'o' || r == 'O':
			values++
		}
	}
	return c, s, values
}

func isStdinPath(a arg) bool {
	return a.is("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")
}

func (j *judge) checkShell(l layer, stmt *syntax.Stmt) {
	sc := parseShell(l.args[1:])
	if sc.script != nil {
		j.noteScript(*sc.script)
	}
	switch {
	case sc.code != nil:
		j.code(*sc.code, l.name+" -c", l.text())
	case sc.script != nil && sc.script.dynamic:
		if j.downloads(sc.script.word) {
			j.runsDownload(l.name, "a script it has just downloaded", l.text())
			return
		}
		j.dynamic(l.name+" runs a script whose path is only known at run time", l.text())
	case sc.stdin:
		j.stdinCode(l, stmt, "sh")
	}
}

// interpCall is how an interpreter was asked to get its code.
type interpCall struct {
	code       []arg // -c, -e, --eval, -r … values
	module     *arg  // python -m
	moduleArgs []arg
	script     *arg
	stdin      bool
}

// interpreterSpec gives each interpreter's options: those holding code
// and the others that take a value.
func interpreterSpec(fam string) (spec optionSpec, codeOpts []string) {
	switch fam {
	case "python":
		return optionSpec{values: "cmWX", last: "cm", posix: true}, []string{"-c"}
	case "perl":
		return optionSpec{values: "eE", attached: "IMmlx0iCdD", posix: true}, []string{"-e", "-E"}
	case "ruby":
		return optionSpec{values: "eIrCE", posix: true}, []string{"-e"}
	case "node":
		return optionSpec{values: "erp", posix: true, longValues: []string{"eval", "print", "require", "import", "input-type", "loader"}},
			[]string{"-e", "-p", "--eval", "--print"}
	case "php":
		return optionSpec{values: "rfcdzBRFE", posix: true}, []string{"-r", "-B", "-R", "-E"}
	case "r":
		return optionSpec{values: "ef", posix: true, longValues: []string{"file"}}, []string{"-e"}
	case "julia":
		return optionSpec{values: "eEpLJtC", posix: true, longValues: []string{"eval", "print", "load", "project", "threads", "sysimage"}},
			[]string{"-e", "-E", "--eval", "--print"}
	default: // lua, Rscript
		return optionSpec{values: "el", posix: true}, []string{"-e"}
	}
}

func parseInterpreter(fam string, args []arg) interpCall {
	spec, codeOpts := interpreterSpec(fam)
	opts, ops := scanOptions(args, spec)
	ic := interpCall{code: values(opts, codeOpts...)}
	if m := values(opts, "-m"); fam == "python" && len(m) > 0 {
		ic.module, ic.moduleArgs = &m[0], ops
		return ic
	}
	if f := values(opts, "-f"); fam == "php" && len(f) > 0 {
		ic.script = &f[0]
		return ic
	}
	switch {
	case len(ic.code) > 0:
	case len(ops) == 0 || isStdinPath(ops[0]):
		ic.stdin = true
	default:
		ic.script = &ops[0]
	}
	return ic
}

// checkInterpreter judges the code an interpreter is given: downloaded
// code, and literal code scanned for the rules' intents (see scanCode).
// python -m's module is judged as a command by package-install.
func (j *judge) checkInterpreter(fam string, l layer, stmt *syntax.Stmt) {
	ic := parseInterpreter(fam, l.args[1:])
	if ic.module != nil {
		return
	}
	if ic.script != nil {
		j.noteScript(*ic.script)
	}
	for _, c := range append(ic.code, derefs(ic.script)...) {
		if c.dynamic && j.downloads(c.word) {
			j.runsDownload(l.name, "code it has just downloaded", l.text())
			return
		}
	}
	for _, c := range ic.code {
		if !c.dynamic {
			j.scanCode(fam, c.text, l.text())
		}
	}
	if ic.stdin {
		j.stdinCode(l, stmt, fam)
	}
}

// checkAwk scans an awk program (the first operand, or -e's) for the
// commands it runs.
func (j *judge) checkAwk(l layer) {
	opts, ops := scanOptions(l.args[1:], optionSpec{values: "FvfeiIlLE", longValues: []string{
		"field-separator", "assign", "file", "source", "include", "load", "exec"}})
	progs := values(opts, "-e", "--source")
	if len(progs) == 0 && len(values(opts, "-f", "--file", "-E", "--exec")) == 0 && len(ops) > 0 {
		progs = ops[:1]
	}
	for _, p := range progs {
		if !p.dynamic {
			j.scanCode("awk", p.text, l.text())
		}
	}
}

// checkAt judges at and batch, which run the shell commands they read
// from standard input (or -f's file) later.
func (j *judge) checkAt(l layer, stmt *syntax.Stmt) {
	opts, _ := scanOptions(l.args[1:], optionSpec{values: "qfMmt", posix: false})
	if has(opts, "-l", "-r", "-d", "-c", "-V") || len(values(opts, "-f")) > 0 {
		return
	}
	j.stdinCode(l, stmt, "sh")
}

func derefs(a *arg) []arg {
	if a == nil {
		return nil
	}
	return []arg{*a}
}

// stdinCode judges what a shell or interpreter (lang, a family) reading
// code from standard input gets from its redirections: from a downloader
// (sh < <(curl …), sh <<< "$(curl …)") it runs what was downloaded; from
// a process substitution, what that prints; a here-document or
// here-string is code, judged as shell code or scanned as another
// language. Pipes are judged with the pipeline.
func (j *judge) stdinCode(l layer, stmt *syntax.Stmt, lang string) {
	if stmt == nil {
		return
	}
	shell := lang == "sh"
	for _, r := range stmt.Redirs {
		switch r.Op {
		case syntax.RdrIn, syntax.WordHdoc, syntax.Hdoc, syntax.DashHdoc, syntax.DplIn:
			if j.downloads(r.Word) || j.downloads(r.Hdoc) {
				j.runsDownload(l.name, "code it reads from a download", l.text())
				return
			}
		}
		var body arg
		switch r.Op {
		case syntax.RdrIn:
			if ps := procSubst(r.Word); ps != nil {
				j.printedCode(ps.Stmts, l, lang)
			}
			continue
		case syntax.Hdoc, syntax.DashHdoc:
			body = literal(heredocSource(r.Hdoc))
		case syntax.WordHdoc:
			body = wordArg(r.Word)
		default:
			continue
		}
		switch {
		case shell:
			j.code(body, l.name+"'s here-document", l.text())
		case !body.dynamic:
			j.scanCode(lang, body.text, l.text())
		}
	}
}

// procSubst is the process substitution a word is made of, or nil.
func procSubst(w *syntax.Word) *syntax.ProcSubst {
	if w == nil || len(w.Parts) != 1 {
		return nil
	}
	ps, _ := w.Parts[0].(*syntax.ProcSubst)
	return ps
}

// printedCode judges code a shell or interpreter reads from what stmts
// print: echo and printf of literal text is judged (or scanned), anything
// else is only known at run time.
func (j *judge) printedCode(stmts []*syntax.Stmt, reader layer, lang string) {
	// echo BASE64 | base64 -d | sh runs what the text decodes to.
	if n := len(stmts); n >= 2 {
		if code, ok := j.decodedText(stmts[n-2], stmts[n-1]); ok {
			if lang == "sh" {
				j.code(literal(code), reader.name+" reading decoded text", reader.text())
			} else {
				j.scanCode(lang, code, reader.text())
			}
			return
		}
	}
	if len(stmts) > 0 {
		stmts = stmts[len(stmts)-1:]
	}
	if len(stmts) == 1 {
		if call, ok := stmts[0].Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			if l := j.finalLayer(call); !l.dynamic() && !l.wrapper && (l.name == "echo" || l.name == "printf") {
				code, ok := printedText(l)
				switch {
				case !ok:
					j.dynamic(reader.name+" runs what "+l.name+" prints", l.text()+" | "+reader.text())
				case lang == "sh":
					j.code(literal(code), reader.name+" reading "+l.name+"'s output", l.text()+" | "+reader.text())
				default:
					j.scanCode(lang, code, l.text()+" | "+reader.text())
				}
				return
			}
		}
	}
	j.dynamic(reader.name+" runs the code it reads from another command", reader.text())
}

// decodedText is what base64 -d prints when an echo or printf of literal
// text feeds it; ok is false for any other pair of stages.
func (j *judge) decodedText(src, dec *syntax.Stmt) (string, bool) {
	call, ok := src.Cmd.(*syntax.CallExpr)
	dcall, dok := dec.Cmd.(*syntax.CallExpr)
	if !ok || !dok || len(call.Args) == 0 || len(dcall.Args) == 0 || len(src.Redirs) > 0 || len(dec.Redirs) > 0 {
		return "", false
	}
	l, d := j.finalLayer(call), j.finalLayer(dcall)
	if l.dynamic() || d.dynamic() || l.name != "echo" && l.name != "printf" || d.name != "base64" {
		return "", false
	}
	opts, ops := scanOptions(d.args[1:], optionSpec{values: "w", longValues: []string{"wrap"}})
	if len(ops) > 0 || !has(opts, "-d", "--decode", "-D") {
		return "", false
	}
	text, known := printedText(l)
	if !known {
		return "", false
	}
	text = strings.Join(strings.Fields(text), "")
	out, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		if out, err = base64.RawStdEncoding.DecodeString(text); err != nil {
			return "", false
		}
	}
	return string(out), true
}

// heredocSource is a here-document's body as written: the shell code a
// shell reading it will parse, its expansions left for that parse to see.
func heredocSource(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	for _, part := range w.Parts {
		if lit, ok := part.(*syntax.Lit); ok {
			b.WriteString(lit.Value)
			continue
		}
		b.WriteString(source([]syntax.WordPart{part}))
	}
	return b.String()
}

func (j *judge) checkEval(l layer) {
	ops := l.args[1:]
	if len(ops) > 0 && ops[0].is("--") {
		ops = ops[1:]
	}
	if len(ops) == 0 {
		return
	}
	var parts []string
	for _, a := range ops {
		if a.dynamic {
			j.code(a, "eval", l.text())
			return
		}
		parts = append(parts, a.text)
	}
	j.code(literal(strings.Join(parts, " ")), "eval", l.text())
}

func (j *judge) checkSource(l layer, stmt *syntax.Stmt) {
	ops := l.args[1:]
	if len(ops) > 0 && ops[0].is("--") {
		ops = ops[1:]
	}
	if len(ops) == 0 {
		return
	}
	j.noteScript(ops[0])
	switch {
	case ops[0].dynamic:
		if j.downloads(ops[0].word) {
			j.runsDownload("source", "a file it has just downloaded", l.text())
			return
		}
		j.dynamic("source runs a file whose path is only known at run time", l.text())
	case isStdinPath(ops[0]):
		j.stdinCode(l, stmt, "sh")
	}
}

// checkTrap judges the code trap runs on a signal: trap 'git push' EXIT.
func (j *judge) checkTrap(l layer) {
	ops := l.args[1:]
	if len(ops) > 0 && ops[0].is("--") {
		ops = ops[1:]
	}
	if len(ops) < 2 || ops[0].is("-", "-p", "-l", "-P") {
		return
	}
	if !ops[0].dynamic && strings.Trim(ops[0].text, "0123456789") == "" && ops[0].text != "" {
		return // trap 1 2: all operands are signals to reset
	}
	j.code(ops[0], "trap", l.text())
}

// checkAlias judges the code an alias stands for.
func (j *judge) checkAlias(l layer) {
	text := l.text()
	for _, a := range l.args[1:] {
		if a.dynamic {
			j.dynamic("alias defines code only known at run time", text)
			continue
		}
		if name, value, ok := strings.Cut(a.text, "="); ok {
			j.code(literal(value), "alias", text)
			if j.aliases == nil {
				j.aliases = map[string][]arg{}
			}
			j.aliases[name] = literals(strings.Fields(value))
		}
	}
}

// expandAlias replaces a command's name by the alias defined for it
// earlier in the command line (alias g=git; g push is git push).
func (j *judge) expandAlias(args []arg) ([]arg, bool) {
	if len(j.aliases) == 0 || args[0].dynamic {
		return nil, false
	}
	value, ok := j.aliases[args[0].text]
	if !ok || len(value) == 0 || value[0].text == args[0].text {
		return nil, false
	}
	return append(append([]arg{}, value...), args[1:]...), true
}

// callFunction judges a call of a function defined earlier in the command
// line that runs its arguments as a command (f() { "$@"; }; f git push).
func (j *judge) callFunction(l layer, stmt *syntax.Stmt) {
	if j.passArgs[l.args[0].text] && len(l.args) > 1 {
		j.nested(func() { j.command(l.args[1:], stmt) })
	}
}
