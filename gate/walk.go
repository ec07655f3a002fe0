package gate

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// script parses shell code and judges every command in it.
func (j *judge) script(src string) {
	if j.stopped() {
		return
	}
	j.parsed += max(len(src), minParseCost)
	if j.parsed > maxParsed {
		j.limit(fmt.Sprintf("the command holds more than %d bytes of shell code", maxParsed))
		return
	}
	j.patterns(strings.TrimSpace(src))
	if bracketDepth(src) > maxBrackets {
		j.limit(fmt.Sprintf("brackets nested more than %d deep", maxBrackets))
		return
	}
	file, err := parse(src)
	if err != nil {
		j.record(Deny, ruleParse, "the shell cannot parse it: "+err.Error(), "")
		return
	}
	// Variables set in this code are its own: nested code (sh -c, eval)
	// starts without them.
	saved := j.literals
	j.literals = j.noteVariables(file)
	j.walk(file)
	j.literals = saved
}

// noteVariables notes, in one pass over the code, what it sets:
//
// The scratch variables (HOME, TMPDIR) it sets anywhere, by an assignment
// (in front of a command too), a for loop, NAME=value in any command's
// arguments (env, sudo, export) or a builtin that sets or unsets the
// names it is given (read, unset…): from then on they are not taken to
// name the sandbox's scratch, wherever they are used on the line, as
// which assignment is in force where is left to the shell (j.assigned).
//
// The variables it sets to literal text in a statement of its own at the
// top level (X='echo hi'; …), with every value, which it returns; any
// other setting of one (X=$(cat f), read X, a for loop, unset X, export
// X=…, X=v in front of a command, which the shell expands the line
// before, or in a subshell, branch or function) leaves its values
// unknown.
func (j *judge) noteVariables(file *syntax.File) map[string]*literalVar {
	v := varNotes{j: j}
	for _, st := range file.Stmts {
		if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) == 0 && !st.Background && !st.Coprocess && !st.Negated {
			v.plain = append(v.plain, call.Assigns...)
		}
	}
	syntax.Walk(file, v.visit)
	return v.out
}

// varNotes is noteVariables' pass: the plain assignments (statements of
// their own at the top level) and the variables noted so far.
type varNotes struct {
	j     *judge
	plain []*syntax.Assign
	out   map[string]*literalVar
}

func (v *varNotes) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Assign:
		if n.Name != nil {
			literal := slices.Contains(v.plain, n) && n.Value != nil && !n.Append && n.Array == nil && n.Index == nil
			v.set(n.Name.Value, n.Value, n.Pos().Offset(), literal)
		}
	case *syntax.WordIter:
		if n.Name != nil {
			v.set(n.Name.Value, nil, n.Pos().Offset(), false)
		}
	case *syntax.CallExpr:
		// NAME=value anywhere (env, sudo, export); a bare NAME only
		// for the builtins that set or unset it (read, unset…).
		sets := len(n.Args) > 0 && setsVariables(n.Args[0].Lit())
		for _, w := range n.Args[min(1, len(n.Args)):] {
			if lit := w.Lit(); lit != "" {
				name, _, assigns := strings.Cut(lit, "=")
				if (assigns || sets) && validName(name) {
					v.set(name, nil, w.Pos().Offset(), false)
				}
			}
		}
	}
	return true
}

// set notes one setting of a variable: literal (ok) to value, or not.
func (v *varNotes) set(name string, value *syntax.Word, pos uint, ok bool) {
	if name == "HOME" || name == "TMPDIR" {
		if v.j.assigned == nil {
			v.j.assigned = map[string]bool{}
		}
		v.j.assigned[name] = true
	}
	if v.out == nil {
		v.out = map[string]*literalVar{}
	}
	lv := v.out[name]
	if lv == nil {
		lv = &literalVar{first: pos, values: []string{}}
		v.out[name] = lv
	}
	lv.first = min(lv.first, pos)
	var text string
	if ok && value != nil {
		text, ok = plainLiteral(value)
	}
	if !ok || lv.values == nil {
		lv.values = nil
		return
	}
	lv.values = append(lv.values, text)
}

// validName reports a shell variable name.
func validName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// setsVariables lists the builtins that set or unset the variables named
// in their arguments.
func setsVariables(name string) bool {
	switch name {
	case "export", "declare", "typeset", "local", "readonly", "read", "unset", "printf", "mapfile", "readarray", "getopts", "let":
		return true
	}
	return false
}

// bracketDepth is the deepest nesting of ( and { in src.
func bracketDepth(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '{':
			depth++
			deepest = max(deepest, depth)
		case ')', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// parse parses bash. A panic in the parser is turned into an error: the
// gate fails closed.
func parse(src string) (file *syntax.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			file, err = nil, fmt.Errorf("parser failure: %v", r)
		}
	}()
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}

// walk visits every node under root: each statement's command, each
// redirection, pipeline, function and assignment, wherever it is nested.
func (j *judge) walk(root syntax.Node) {
	var deeper []bool // per open node: whether it raised j.depth
	syntax.Walk(root, func(n syntax.Node) bool {
		if n == nil {
			if deeper[len(deeper)-1] {
				j.depth--
			}
			deeper = deeper[:len(deeper)-1]
			return true
		}
		if j.stopped() || !j.tick() {
			return false
		}
		raised := false
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			if j.depth >= maxDepth {
				j.limit(fmt.Sprintf("code nested more than %d levels deep (sh -c, eval, $(…)…)", maxDepth))
				return false
			}
			j.depth++
			raised = true
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				if j.current == nil {
					j.current = map[*syntax.Redirect]*syntax.Stmt{}
				}
				j.current[r] = n
			}
			j.statement(n)
		case *syntax.Redirect:
			j.redirect(n)
		case *syntax.BinaryCmd:
			j.pipeline(n)
		case *syntax.FuncDecl:
			j.function(n)
		case *syntax.CallExpr:
			j.markPrefixes(n)
		case *syntax.ForClause:
			j.loop(n)
		case *syntax.Assign:
			j.assignment(n)
		}
		if j.stopped() {
			if raised {
				j.depth--
			}
			return false
		}
		deeper = append(deeper, raised)
		return true
	})
}

// statement judges a simple command with the statement it is in (whose
// redirections feed it).
func (j *judge) statement(s *syntax.Stmt) {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return
	}
	j.command(words(call.Args), s)
}

// redirect judges where a redirection reads or writes: a process
// substitution's code, and the redirection site's rules.
func (j *judge) redirect(r *syntax.Redirect) {
	if r.Word == nil || len(r.Word.Parts) == 0 {
		return
	}
	target := wordArg(r.Word)
	st, inStmt := j.current[r]
	var producer, reader *layer
	if inStmt && writesFile(r.Op) {
		producer, reader = j.outputToShell(r, st)
	}
	if !target.dynamic && r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc && r.Op != syntax.WordHdoc {
		j.noteWord(target, true)
	}
	if !target.dynamic && writesFile(r.Op) {
		j.noteWritten(target)
	}
	j.applySite(Invocation{site: siteRedirect, scope: j.scope(), stmt: st,
		redir: redirection{op: r.Op, target: target, producer: producer, reader: reader}})
}

// writesFile reports whether a redirection opens its target for writing.
func writesFile(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob,
		syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut, syntax.DplOut:
		return true
	}
	return false
}

// assignment judges a variable whose value the shell or a tool later runs
// as a command (GIT_PAGER, PROMPT_COMMAND, …), and notes one that holds a
// directory mktemp made.
func (j *judge) assignment(a *syntax.Assign) {
	if a.Name == nil || a.Array != nil {
		return
	}
	if !j.prefixes[a] {
		j.setVariable(a)
	}
	if a.Value == nil {
		return
	}
	j.codeVariable(a.Name.Value, wordArg(a.Value))
}

// markPrefixes notes the assignments in front of a command (HOME=x cmd):
// the shell expands the rest of the line before they apply and drops
// them after the command, so later statements keep the old values.
func (j *judge) markPrefixes(call *syntax.CallExpr) {
	if len(call.Args) == 0 || len(call.Assigns) == 0 {
		return
	}
	if j.prefixes == nil {
		j.prefixes = map[*syntax.Assign]bool{}
	}
	for _, a := range call.Assigns {
		j.prefixes[a] = true
	}
}

// loop notes a for loop's variable when it takes literal words or globs
// (for d in build /tmp/x *.o): a path made of it is judged for each value,
// a glob as the pattern (/etc/* is everything in /etc).
// Any other loop leaves the variable only known at run time.
func (j *judge) loop(f *syntax.ForClause) {
	it, ok := f.Loop.(*syntax.WordIter)
	if !ok || it.Name == nil {
		return
	}
	delete(j.loopVars, it.Name.Value)
	delete(j.tempVars, it.Name.Value)
	if !it.InPos.IsValid() {
		return // for x; do …: the positional parameters
	}
	var values []string
	for _, w := range it.Items {
		for _, a := range words([]*syntax.Word{w}) {
			if a.dynamic {
				return
			}
			values = append(values, a.text)
		}
	}
	if j.loopVars == nil {
		j.loopVars = map[string][]string{}
	}
	j.loopVars[it.Name.Value] = values
}

// setVariable follows what an assignment does to the variables the gate
// tracks: a mktemp result, a loop variable.
func (j *judge) setVariable(a *syntax.Assign) {
	delete(j.loopVars, a.Name.Value)
	if a.Value != nil && isMktemp(a.Value) {
		if j.tempVars == nil {
			j.tempVars = map[string]bool{}
		}
		j.tempVars[a.Name.Value] = true
	} else {
		delete(j.tempVars, a.Name.Value)
	}
}

// isMktemp reports a value that is $(mktemp …) making a file or directory
// in the temporary directory: no template with a directory in it, no -p.
func isMktemp(w *syntax.Word) bool {
	parts := w.Parts
	if len(parts) == 1 {
		if dq, ok := parts[0].(*syntax.DblQuoted); ok {
			parts = dq.Parts
		}
	}
	if len(parts) != 1 {
		return false
	}
	cs, ok := parts[0].(*syntax.CmdSubst)
	if !ok || len(cs.Stmts) != 1 {
		return false
	}
	call, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false
	}
	args := words(call.Args)
	if commandName(args[0].text) != "mktemp" || args[0].dynamic {
		return false
	}
	for _, a := range args[1:] {
		if a.dynamic || strings.Contains(a.text, "/") || a.is("-p") || strings.HasPrefix(a.text, "--tmpdir=") {
			return false
		}
	}
	return true
}

// codeVariable judges NAME=value when NAME holds a command line.
func (j *judge) codeVariable(name string, value arg) {
	if !holdsCode(name) || value.dynamic || strings.TrimSpace(value.text) == "" {
		return
	}
	code := strings.TrimPrefix(value.text, "|") // LESSOPEN='|cmd %s'
	j.nested(func() { j.script(code) })
}

// holdsCode lists variables whose value tools run as a shell command.
func holdsCode(name string) bool {
	switch name {
	case "GIT_SSH_COMMAND", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS",
		"SSH_ASKPASS", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "PROMPT_COMMAND", "LESSOPEN", "LESSCLOSE",
		"BROWSER", "GH_BROWSER", "GH_PAGER", "GH_EDITOR":
		return true
	}
	return false
}

// function notes a function definition (one that runs its arguments as
// a command) and judges its site: how often its body starts it.
func (j *judge) function(fd *syntax.FuncDecl) {
	if fd.Name == nil || fd.Body == nil {
		return
	}
	v := functionView{name: fd.Name.Value}
	syntax.Walk(fd.Body, func(n syntax.Node) bool {
		if n == nil || !j.tick() {
			return n == nil
		}
		if s, ok := n.(*syntax.Stmt); ok {
			if call, ok := s.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
				if first, ok := plainLiteral(call.Args[0]); ok && first == v.name {
					v.calls++
					v.background = v.background || s.Background
				}
			}
		}
		return true
	})
	if runsArgs(fd.Body) {
		if j.passArgs == nil {
			j.passArgs = map[string]bool{}
		}
		j.passArgs[v.name] = true
	}
	j.applySite(Invocation{site: siteFunction, scope: j.scope(), fn: v})
}

// runsArgs reports a function body that runs its arguments as a command:
// a simple command whose name is "$@", "$*", $1 or a wrapper of them.
func runsArgs(body syntax.Node) bool {
	found := false
	syntax.Walk(body, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if found || !ok || len(call.Args) == 0 {
			return !found
		}
		layers, _ := resolveLayers(words(call.Args))
		if last := layers[len(layers)-1]; last.dynamic() {
			t := strings.Trim(last.args[0].text, `"{}$`)
			found = t == "@" || t == "*" || t == "1"
		}
		return !found
	})
	return found
}

// outputToShell judges a command whose output goes to code through a
// process substitution (… > >(bash)): echo or printf is judged as code,
// anything else is only known at run time. A download fed to it is
// download-exec's: it returns the downloader and the reader, and judges
// nothing further.
func (j *judge) outputToShell(r *syntax.Redirect, st *syntax.Stmt) (producer, reader *layer) {
	ps := procSubst(r.Word)
	if ps == nil || ps.Op != syntax.CmdOut {
		return nil, nil
	}
	for _, inner := range ps.Stmts {
		call, ok := inner.Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			continue
		}
		rd := j.finalLayer(call)
		kind := runsUnseenCode(rd)
		if kind != shellStdin && kind != otherStdin {
			continue
		}
		if prod, ok := st.Cmd.(*syntax.CallExpr); ok && len(prod.Args) > 0 && isDownloader(j.finalLayer(prod).name) {
			p := j.finalLayer(prod)
			return &p, &rd
		}
		lang := family(rd.name)
		if kind == shellStdin {
			lang = "sh"
		}
		j.printedCode([]*syntax.Stmt{st}, rd, lang)
	}
	return nil, nil
}
