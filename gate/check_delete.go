package gate

import (
	"path"
	"slices"
	"strings"
)

// dangerousTarget is Gate.dangerousTarget for the command line being
// judged: a relative path is resolved against where an earlier cd went,
// a variable holding a mktemp result is scratch, and a search from a
// home directory counts as the home directory.
func (s scope) dangerousTarget(a arg) string {
	if a.dynamic {
		if why, ok := s.scratchTarget(a); ok {
			return why
		}
		if values, ok := loopValues(a, s.loopVars); ok {
			for _, v := range values {
				if why := s.dangerousTarget(v); why != "" {
					return why + " (" + a.text + " is " + v.text + ")"
				}
			}
			return ""
		}
		return s.gate.dangerousTarget(a)
	}
	if strings.HasPrefix(a.text, "~") && s.assigned["HOME"] {
		return "a path in the home directory, which the command line sets itself"
	}
	if s.cwd != "" && a.text != "" && !path.IsAbs(a.text) && !strings.HasPrefix(a.text, "~") {
		if strings.HasPrefix(s.cwd, "$") {
			return "a relative path after cd to " + s.cwd
		}
		joined := path.Join(s.cwd, a.text)
		if why := s.gate.dangerousTarget(literal(joined)); why != "" {
			return why + " (" + a.text + " after cd " + s.cwd + ")"
		}
		return ""
	}
	return s.gate.dangerousTarget(a)
}

// checkCd follows cd, pushd and popd: where relative paths lead from then
// on. A target only known at run time, or back (cd -, popd), leaves the
// gate unable to tell.
func (j *judge) checkCd(l layer) {
	_, ops := scanOptions(l.args[1:], optionSpec{})
	target := literal("~")
	switch {
	case l.name == "popd":
		target = literal("-")
	case len(ops) > 0:
		target = ops[0]
	}
	switch {
	case isHomeDir(target):
		j.cwd = "~"
	case target.dynamic:
		j.cwd = "$DIR"
		if why, ok := j.scope().scratchTarget(target); ok && why == "" {
			j.cwd = "/tmp/mktemp" // somewhere inside scratch
		}
	case target.is("-") || strings.HasPrefix(target.text, "+"):
		j.cwd = "$OLDPWD"
	case path.IsAbs(target.text) || strings.HasPrefix(target.text, "~") || strings.HasPrefix(j.cwd, "$"):
		j.cwd = path.Clean(target.text)
	default:
		j.cwd = path.Join(j.cwd, target.text)
	}
	if j.cwd == "." {
		j.cwd = ""
	}
}

// deleteTools are recursive-delete's tools and their checks.
func deleteTools() map[string]ruleCheck {
	return map[string]ruleCheck{"rm": checkRm, "find": checkFindDelete, "rsync": checkRsync,
		"shred": checkShred, "srm": checkShred, "wipe": checkShred}
}

// checkShred judges shred, srm and wipe, which destroy the files they are
// given (a disk device is disk-write's).
func checkShred(c Invocation) (finding, bool) {
	_, ops := scanOptions(c.args[1:], optionSpec{values: "ns", longValues: []string{"iterations", "size", "random-source"}})
	for _, t := range ops {
		if !t.dynamic && isDiskDevice(t.text) {
			continue // disk-write's
		}
		if why := c.dangerousTarget(t); why != "" {
			return found(c.name + " would destroy " + why)
		}
	}
	return finding{}, false
}

// checkRm judges rm -r (with or without -f: without a terminal there is
// nobody to answer its questions, so -f changes little).
func checkRm(c Invocation) (finding, bool) {
	l := c.layer
	opts, ops := scanOptions(l.args[1:], optionSpec{})
	recursive := has(opts, "-r", "-R", "--recursive")
	// A word only known at run time may be -rf, given another to delete.
	if !recursive && !(mayHideOption(l.args[1:]) && len(ops) >= 2) {
		return finding{}, false
	}
	for _, t := range ops {
		if why := c.dangerousTarget(t); why != "" {
			return found("rm -r would delete " + why)
		}
	}
	return finding{}, false
}

// findCall is a find command line: its starting points and expression.
type findCall struct {
	starts []arg
	expr   []arg
}

func parseFind(args []arg) findCall {
	i := 0
	for i < len(args) && (args[i].is("-H", "-L", "-P") || !args[i].dynamic && strings.HasPrefix(args[i].text, "-O")) {
		i++
	}
	if i < len(args) && args[i].is("-D") {
		i += 2
	}
	var f findCall
	for ; i < len(args); i++ {
		a := args[i]
		if !a.dynamic && (strings.HasPrefix(a.text, "-") || a.is("(", "!", ")", ",")) {
			break
		}
		f.starts = append(f.starts, a)
	}
	if len(f.starts) == 0 {
		f.starts = []arg{literal(".")}
	}
	if i < len(args) {
		f.expr = args[i:]
	}
	return f
}

// findNarrowing are find's tests that select some files rather than all.
var findNarrowing = map[string]bool{
	"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true, "-iwholename": true, "-regex": true,
	"-iregex": true, "-lname": true, "-ilname": true, "-newer": true, "-anewer": true, "-cnewer": true, "-mtime": true,
	"-mmin": true, "-atime": true, "-amin": true, "-ctime": true, "-cmin": true, "-size": true, "-user": true, "-group": true,
	"-uid": true, "-gid": true, "-perm": true, "-links": true, "-inum": true, "-samefile": true, "-used": true, "-context": true,
}

// narrowed reports whether the tests before expr[k] select only some
// files for the action there: a test whose value is not "*", not undone
// by a later -o or a "!". find evaluates left to right, so a test after
// the action (find . -delete -name x) narrows nothing.
func narrowed(expr []arg, k int) bool {
	n := false
	for i := 0; i < k; i++ {
		t := expr[i]
		switch {
		case t.is("-o", "-or", ","):
			n = false
		case t.is("!", "-not"):
			i++ // a negated test selects nearly everything
			if i < k && findNarrowing[expr[i].text] {
				i++
			}
		case t.is("-empty"):
			n = true
		case !t.dynamic && findNarrowing[t.text] && i+1 < k:
			v := expr[i+1]
			if v.dynamic || !v.is("*", ".*", "*/*", "./*", "") {
				n = true
			}
			i++
		}
	}
	return n
}

// found is what find passes for each file an action at expr[k] gets: a
// path under the most dangerous starting point, or the starting point
// itself when nothing narrows what is found (it is found too).
func (sc scope) found(f findCall, k int) arg {
	pick := f.starts[0]
	for _, st := range f.starts {
		if sc.dangerousTarget(st) != "" {
			pick = st
			break
		}
	}
	if !narrowed(f.expr, k) {
		return pick
	}
	return under(pick)
}

// findValues is how many arguments a find primary takes after it.
func findValues(t arg) int {
	switch {
	case t.dynamic:
		return 0
	case findNarrowing[t.text], t.is("-maxdepth", "-mindepth", "-type", "-xtype", "-fstype", "-printf", "-fprint", "-fprint0", "-fls", "-files0-from"),
		strings.HasPrefix(t.text, "-newer") && len(t.text) == len("-newerXY"):
		return 1
	case t.is("-fprintf"):
		return 2
	}
	return 0
}

// isFindAction reports whether expr[k] is the action name, not the value
// of a test before it (find . -name -delete deletes nothing).
func isFindAction(expr []arg, k int, name ...string) bool {
	i := 0
	for ; i < k; i++ {
		if expr[i].is("-exec", "-execdir", "-ok", "-okdir") {
			// The command's words up to ; or + are its arguments, not
			// find's (find . -exec echo -delete \; deletes nothing).
			for i+1 < len(expr) && !expr[i+1].is(";", "+") {
				i++
			}
			i++
			continue
		}
		i += findValues(expr[i])
	}
	return i == k && expr[k].is(name...)
}

// checkFindDelete judges find -delete on what it would find.
func checkFindDelete(c Invocation) (finding, bool) {
	l := c.layer
	f := parseFind(l.args[1:])
	for k := range f.expr {
		if !isFindAction(f.expr, k, "-delete") {
			continue
		}
		for _, s := range f.starts {
			target := under(s)
			if !narrowed(f.expr, k) || mayHoldHome(s) {
				target = s // a search from a home may reach its credential files
			}
			if why := c.dangerousTarget(target); why != "" {
				return found("find -delete would delete " + why)
			}
		}
	}
	return finding{}, false
}

// findCommands judges the commands -exec, -execdir, -ok and -okdir run,
// with {} standing for what is found. rm run on each file found deletes
// a tree, so it is judged as rm -r. Under a home directory a found file
// may be a credential file, so other commands get one of those.
func (j *judge) findCommands(l layer) {
	f := parseFind(l.args[1:])
	for k := 0; k < len(f.expr) && !j.stopped(); k++ {
		if !f.expr[k].is("-exec", "-execdir", "-ok", "-okdir") {
			continue
		}
		end := k + 1
		for end < len(f.expr) && !f.expr[end].is(";", "+") {
			end++
		}
		j.runOnFound(f.expr[k+1:end], j.scope().found(f, k), f.starts)
		k = end
	}
}

// runOnFound judges a command a tool runs on every file it finds under
// starts (find -exec, rg --pre), found standing for each.
func (j *judge) runOnFound(cmd []arg, found arg, starts []arg) {
	if len(cmd) == 0 {
		return
	}
	layers, _ := resolveLayers(cmd)
	last := layers[len(layers)-1]
	if !last.dynamic() && (last.name == "rm" || last.name == "unlink") && !last.wrapper {
		n := len(cmd) - len(last.args) + 1
		cmd = append(append(append([]arg{}, cmd[:n]...), literal("-r")), cmd[n:]...)
	} else if !last.dynamic() && !last.wrapper && (last.name == "chmod" || last.name == "chown" || last.name == "chgrp" || last.name == "setfacl") {
		// Run on every file of a tree, it changes the tree: chmod -R.
		n := len(cmd) - len(last.args) + 1
		cmd = append(append(append([]arg{}, cmd[:n]...), literal("-R")), cmd[n:]...)
	} else if slices.ContainsFunc(starts, mayHoldHome) {
		found = literal("~/.ssh/found")
	}
	inner := substituteFound(cmd, found)
	if !slices.ContainsFunc(cmd, func(a arg) bool { return strings.Contains(a.text, "{}") }) {
		inner = append(inner, found)
	}
	j.nested(func() { j.command(inner, nil) })
}

// under is a path inside a find starting point, what {} becomes.
func under(start arg) arg {
	if start.dynamic {
		return start
	}
	return literal(strings.TrimSuffix(start.text, "/") + "/x")
}

// substituteFound puts a found path in place of {}. As the command's name
// {} is only known at run time.
func substituteFound(args []arg, found arg) []arg {
	out := make([]arg, len(args))
	for i, a := range args {
		switch {
		case !strings.Contains(a.text, "{}"):
			out[i] = a
		case i == 0 || a.dynamic || found.dynamic:
			out[i] = arg{text: a.text, dynamic: true, word: a.word}
		default:
			out[i] = literal(strings.ReplaceAll(a.text, "{}", found.text))
		}
	}
	return out
}

// checkRsync judges rsync --delete (and --del), which empties its
// destination of what the source lacks.
func checkRsync(c Invocation) (finding, bool) {
	l := c.layer
	opts, ops := scanOptions(l.args[1:], optionSpec{values: "efTB", longValues: []string{
		"rsh", "filter", "exclude", "include", "files-from", "rsync-path", "temp-dir", "log-file", "password-file",
		"chmod", "chown", "bwlimit", "max-size", "min-size", "exclude-from", "include-from", "compare-dest", "copy-dest", "link-dest"}})
	if has(opts, "--remove-source-files") {
		for _, src := range ops[:max(len(ops)-1, 0)] {
			if why := c.dangerousTarget(src); why != "" && (src.dynamic || !strings.Contains(strings.SplitN(src.text, "/", 2)[0], ":")) {
				return found("rsync --remove-source-files would delete from " + why)
			}
		}
	}
	if !hasPrefixed(opts, "--del") || len(ops) < 2 || has(opts, "-n", "--dry-run") {
		return finding{}, false // -n lists what --delete would remove
	}
	dest := ops[len(ops)-1]
	if !dest.dynamic && strings.Contains(strings.SplitN(dest.text, "/", 2)[0], ":") {
		return finding{}, false // a remote destination: the sandbox's network policy decides
	}
	if why := c.dangerousTarget(dest); why != "" {
		return found("rsync --delete would delete from " + why)
	}
	return finding{}, false
}

// checkChmod judges recursive permission and ownership changes.
func checkChmod(c Invocation) (finding, bool) {
	l := c.layer
	spec := optionSpec{}
	if l.name == "setfacl" {
		spec = optionSpec{values: "mMxX", longValues: []string{"set", "set-file", "modify", "modify-file", "remove", "remove-file"}}
	}
	opts, ops := scanOptions(l.args[1:], spec)
	if !has(opts, "-R", "--recursive") {
		return finding{}, false
	}
	targets := ops
	modeAsOption := l.name == "chmod" && has(opts, "-r", "-w", "-x", "-X", "-s", "-t")
	if l.name != "setfacl" && !hasPrefixed(opts, "--reference") && !modeAsOption && len(targets) > 0 {
		targets = targets[1:] // the mode or owner
	}
	for _, t := range targets {
		if why := c.dangerousTarget(t); why != "" {
			return found(l.name + " -R would change " + why)
		}
	}
	return finding{}, false
}

// rgPreprocessor judges rg --pre COMMAND, which rg runs on every file it
// searches, with the file's path as its argument.
func (j *judge) rgPreprocessor(l layer) {
	opts, ops := scanOptions(l.args[1:], optionSpec{values: "efgtTAmBCjMrE", longValues: []string{
		"pre", "pre-glob", "regexp", "file", "glob", "iglob", "type", "type-not", "after-context", "before-context",
		"context", "threads", "max-count", "max-columns", "replace", "encoding", "type-add", "ignore-file", "sort", "sortr"}})
	pre := values(opts, "--pre")
	if len(pre) == 0 {
		return
	}
	paths := ops
	if len(values(opts, "-e", "--regexp", "-f", "--file")) == 0 && len(paths) > 0 {
		paths = paths[1:] // the pattern
	}
	if len(paths) == 0 {
		paths = []arg{literal(".")}
	}
	cmd := pre[len(pre)-1]
	if cmd.dynamic {
		j.dynamic("rg --pre runs a command only known at run time", l.text())
		return
	}
	j.runOnFound([]arg{cmd, literal("{}")}, j.scope().found(findCall{starts: paths}, 0), paths)
}
